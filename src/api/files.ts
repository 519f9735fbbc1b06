import type { FastifyInstance } from 'fastify';
import { ParleyError } from '../errors.js';
import { getSession } from '../store/getSession.js';
import { listWorkspaceFiles, workspaceDir } from '../tools/shell/workspace.js';
import type { ApiDeps } from './deps.js';
import { pathId } from './validate.js';

/**
 * `GET /api/v1/chat/sessions/{id}/files`: what the session's shell commands left in its
 * working directory (paths, types, sizes; never contents). Tenant-scoped like every
 * session endpoint: another tenant's session is a 404, as a missing one is. In a split
 * deployment the API must see the workers' `tools.workspace_dir` (a shared volume).
 */
export function fileRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.get<{ Params: { sessionId: string } }>(
    '/api/v1/chat/sessions/:sessionId/files',
    async (request) => {
      const tenant = request.principal.tenant;
      const session = await getSession(
        deps.db,
        tenant,
        pathId(request.params.sessionId, 'session_id'),
      );
      if (!session) throw new ParleyError('session_not_found', 'no such session');
      const dir = workspaceDir(deps.config.tools.workspaceDir, tenant, session.session_id);
      const listed = await listWorkspaceFiles(dir);
      return { session_id: session.session_id, ...listed };
    },
  );
}
