import type { FastifyInstance } from 'fastify';
import { listWorkspaceFiles, workspaceDir } from '../tools/shell/workspace.js';
import type { ApiDeps } from './deps.js';

/**
 * `GET /api/v1/chat/sessions/{id}/files`: what the session's shell commands left in its
 * working directory (paths, types, sizes; never contents). Like every session endpoint,
 * a session the principal may not see is a 404, as a missing one is. In a split
 * deployment the API must see the workers' `tools.workspace_dir` (a shared volume).
 */
export function fileRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.get<{ Params: { sessionId: string } }>(
    '/api/v1/chat/sessions/:sessionId/files',
    async (request) => {
      const tenant = request.principal.tenant;
      const sessionId = request.session.session_id;
      const dir = workspaceDir(deps.config.tools.workspaceDir, tenant, sessionId);
      const listed = await listWorkspaceFiles(dir);
      return { session_id: sessionId, ...listed };
    },
  );
}
