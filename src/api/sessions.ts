import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ParleyError } from '../errors.js';
import { newSessionId } from '../ids.js';
import { createSession } from '../store/createSession.js';
import { getSession } from '../store/getSession.js';
import { listMessages } from '../store/listMessages.js';
import { decodeCursor, listSessions } from '../store/listSessions.js';
import { agentsOf, type ApiDeps } from './deps.js';
import { pathId, text, validate } from './validate.js';

const createBody = z
  .object({ agent: text().min(1).max(128).optional(), title: text().max(500).optional() })
  .strict();
const pageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: text().max(500).optional(),
  before: text().max(500).optional(),
});

/** PROTOCOL.md §1: create, list (cursor), detail projection, transcript (backward cursor). */
export function sessionRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.post('/api/v1/chat/sessions', async (request, reply) => {
    const body = validate(createBody, request.body);
    const tenant = request.principal.tenant;
    const agents = agentsOf(deps);
    const agent = body.agent ?? agents.defaultName(tenant);
    const agentConfig = agents.get(tenant, agent);
    if (!agentConfig) throw new ParleyError('unknown_agent', `no agent named "${agent}"`);
    const sessionId = newSessionId();
    await deps.db.transaction((tx) =>
      createSession(tx, {
        tenant,
        sessionId,
        agent,
        title: body.title ?? null,
        greeting: agentConfig.greeting,
      }),
    );
    return reply.status(201).send(await getSession(deps.db, tenant, sessionId));
  });

  app.get('/api/v1/chat/sessions', async (request) => {
    const query = validate(pageQuery, request.query);
    let cursor = null;
    if (query.cursor !== undefined) {
      const parts = decodeCursor(query.cursor);
      const [updatedAt, sessionId] = parts ?? [];
      if (
        typeof updatedAt !== 'string' ||
        typeof sessionId !== 'string' ||
        Number.isNaN(Date.parse(updatedAt)) ||
        !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(updatedAt)
      ) {
        throw new ParleyError('invalid_cursor', 'cursor: not a cursor this server made');
      }
      cursor = { updatedAt, sessionId: pathId(sessionId, 'cursor') };
    }
    return listSessions(deps.db, request.principal.tenant, { limit: query.limit, cursor });
  });

  app.get<{ Params: { sessionId: string } }>(
    '/api/v1/chat/sessions/:sessionId',
    async (request) => {
      const sessionId = pathId(request.params.sessionId, 'session_id');
      const session = await getSession(deps.db, request.principal.tenant, sessionId);
      if (!session) throw new ParleyError('session_not_found', 'no such session');
      return session;
    },
  );

  app.get<{ Params: { sessionId: string } }>(
    '/api/v1/chat/sessions/:sessionId/messages',
    async (request) => {
      const sessionId = pathId(request.params.sessionId, 'session_id');
      const query = validate(pageQuery, request.query);
      const tenant = request.principal.tenant;
      let before: number | null = null;
      if (query.before !== undefined) {
        // A sequence: at most 15 digits, so it stays an exact integer and a valid bigint.
        if (!/^\d{1,15}$/.test(query.before)) {
          throw new ParleyError('invalid_cursor', 'before: not a cursor');
        }
        before = Number(query.before);
      }
      const session = await getSession(deps.db, tenant, sessionId);
      if (!session) throw new ParleyError('session_not_found', 'no such session');
      return listMessages(deps.db, tenant, sessionId, { before, limit: query.limit });
    },
  );
}
