import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ParleyError } from '../errors.js';
import { deleteMemory } from '../store/deleteMemory.js';
import { decodeCursor } from '../store/listSessions.js';
import { listMemories } from '../store/listMemories.js';
import type { ApiDeps } from './deps.js';
import { hasRole } from './principal.js';
import { validate, text, pathId } from './validate.js';

const listQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(200).default(50),
    cursor: text().max(500).optional(),
    agent: text().min(1).max(128).optional(),
    /** Admins only, for someone else: a user name, or `*` for every user of the tenant. */
    user: text().min(1).max(128).optional(),
  })
  .strict();

/**
 * What agents remember about people (`remember`), for those people to see and delete.
 * Tenant-scoped; a principal sees and deletes their own memories; `admin` may name
 * another user (`?user=NAME`, `?user=*` for all) and delete any of the tenant's. Someone
 * else's memory answers 404, like a missing one: existence does not leak.
 */
export function memoryRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.get('/api/v1/memories', async (request) => {
    const query = validate(listQuery, request.query);
    const { principal } = request;
    const user = query.user ?? principal.user;
    if (user !== principal.user && !hasRole(principal, 'admin')) {
      throw new ParleyError('forbidden', "listing another user's memories needs the admin role");
    }
    let cursor: string | null = null;
    if (query.cursor !== undefined) {
      const parts = decodeCursor(query.cursor);
      if (!parts || typeof parts[0] !== 'string') {
        throw new ParleyError('invalid_cursor', 'cursor: not a cursor this server made');
      }
      cursor = parts[0];
    }
    return listMemories(
      deps.db,
      { tenant: principal.tenant, user: user === '*' ? null : user, agent: query.agent ?? null },
      { limit: query.limit, cursor },
    );
  });

  app.delete<{ Params: { memoryId: string } }>('/api/v1/memories/:memoryId', async (request) => {
    const { principal } = request;
    const own = hasRole(principal, 'admin') ? null : principal.user;
    const memoryId = pathId(request.params.memoryId, 'memory_id');
    const deleted = await deleteMemory(deps.db, principal.tenant, memoryId, own);
    if (!deleted) throw new ParleyError('not_found', 'no such memory');
    return { memory_id: memoryId, deleted: true };
  });
}
