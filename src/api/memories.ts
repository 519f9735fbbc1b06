import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ParleyError } from '../errors.js';
import { deleteMemory } from '../store/deleteMemory.js';
import { decodeCursor } from '../store/listSessions.js';
import { listMemories } from '../store/listMemories.js';
import { anyWordQuery } from '../store/recallMemories.js';
import type { ApiDeps } from './deps.js';
import { hasRole } from './principal.js';
import { route, routeOptions, typed } from './contract.js';
import { text, pathId } from './validate.js';

const listQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(200).default(50),
    cursor: text().max(500).optional(),
    agent: text().min(1).max(128).optional(),
    q: text()
      .max(500)
      .optional()
      .meta({ description: 'words to search for: memories with any of them (stemmed, as recall)' }),
    /** Admins only, for someone else: a user name, or `*` for every user of the tenant. */
    user: text()
      .min(1)
      .max(128)
      .optional()
      .meta({ description: 'admin role needed for anyone but yourself' }),
  })
  .strict();

const memory = z.object({
  memory_id: z.string(),
  agent: z.string(),
  user: z.string(),
  text: z.string(),
  session_id: z.string().nullable(),
  created_at: z.string().meta({ format: 'date-time' }),
});

export const memoryContracts = {
  list: route({
    method: 'GET',
    url: '/api/v1/memories',
    summary: "The principal's memories, newest first (admin: ?user=NAME or ?user=* for the tenant)",
    querystring: listQuery,
    responses: {
      '200': z.object({ items: z.array(memory), next_cursor: z.string().nullable() }),
    },
    errors: { '400': 'invalid_request, invalid_cursor', '403': 'forbidden' },
  }),
  delete: route({
    method: 'DELETE',
    url: '/api/v1/memories/:memoryId',
    summary: 'Delete one of your memories (admin: any of the tenant)',
    responses: { '200': z.object({ memory_id: z.string(), deleted: z.literal(true) }) },
    errors: { '404': 'not_found' },
  }),
};

/**
 * What agents remember about people (`remember`), for those people to see and delete.
 * Tenant-scoped; a principal sees and deletes their own memories; `admin` may name
 * another user (`?user=NAME`, `?user=*` for all) and delete any of the tenant's. Someone
 * else's memory answers 404, like a missing one: existence does not leak.
 */
export function memoryRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const api = typed(app);
  api.get(memoryContracts.list.url, routeOptions(memoryContracts.list), async (request) => {
    const query = request.query;
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
      {
        tenant: principal.tenant,
        user: user === '*' ? null : user,
        agent: query.agent ?? null,
        search: query.q === undefined || query.q.trim() === '' ? null : anyWordQuery(query.q),
      },
      { limit: query.limit, cursor },
    );
  });

  api.delete(memoryContracts.delete.url, routeOptions(memoryContracts.delete), async (request) => {
    const { principal } = request;
    const own = hasRole(principal, 'admin') ? null : principal.user;
    const memoryId = pathId(request.params.memoryId, 'memory_id');
    const deleted = await deleteMemory(deps.db, principal.tenant, memoryId, own);
    if (!deleted) throw new ParleyError('not_found', 'no such memory');
    return { memory_id: memoryId, deleted: true as const };
  });
}
