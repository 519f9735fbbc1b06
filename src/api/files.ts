import type { FastifyInstance } from 'fastify';
import { listWorkspaceFiles, workspaceDir } from '../tools/shell/workspace.js';
import { z } from 'zod';
import { route, routeOptions, typed } from './contract.js';
import type { ApiDeps } from './deps.js';

export const fileContracts = {
  list: route({
    method: 'GET',
    url: '/api/v1/chat/sessions/:sessionId/files',
    summary: "Files in the session's working directory (what shell commands left), never contents",
    responses: {
      '200': z.object({
        session_id: z.string(),
        truncated: z.boolean(),
        files: z.array(
          z.object({
            path: z.string(),
            type: z.enum(['file', 'directory', 'symlink', 'other']),
            size: z.number().int(),
            modified_at: z.string().meta({ format: 'date-time' }),
          }),
        ),
      }),
    },
    errors: { '404': 'session_not_found' },
  }),
};

/**
 * `GET /api/v1/chat/sessions/{id}/files`: what the session's shell commands left in its
 * working directory (paths, types, sizes; never contents). Like every session endpoint,
 * a session the principal may not see is a 404, as a missing one is. In a split
 * deployment the API must see the workers' `tools.workspace_dir` (a shared volume).
 */
export function fileRoutes(app: FastifyInstance, deps: ApiDeps): void {
  typed(app).get(fileContracts.list.url, routeOptions(fileContracts.list), async (request) => {
    const tenant = request.principal.tenant;
    const sessionId = request.session.session_id;
    const dir = workspaceDir(deps.config.tools.workspaceDir, tenant, sessionId);
    const listed = await listWorkspaceFiles(dir);
    return { session_id: sessionId, ...listed };
  });
}
