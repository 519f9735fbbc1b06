import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { defaultAgentName } from '../config/load.js';
import { ParleyError } from '../errors.js';
import { newSessionId } from '../ids.js';
import { createSession } from '../store/createSession.js';
import { getSession } from '../store/getSession.js';
import { listMessages } from '../store/listMessages.js';
import { decodeCursor, listSessions } from '../store/listSessions.js';
import type { ApiDeps } from './deps.js';
import { validate } from './validate.js';

const createBody = z
  .object({ agent: z.string().min(1).max(128).optional(), title: z.string().max(500).optional() })
  .strict();
const pageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().max(500).optional(),
  before: z.string().max(500).optional(),
});

/** PROTOCOL.md §1: create, list (cursor), detail projection, transcript (backward cursor). */
export function sessionRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.post('/api/v1/chat/sessions', async (request, reply) => {
    const body = validate(createBody, request.body);
    const agent = body.agent ?? defaultAgentName(deps.config);
    const agentConfig = deps.config.agents[agent];
    if (!agentConfig) throw new ParleyError('unknown_agent', `no agent named "${agent}"`);
    const tenant = request.principal.tenant;
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
      if (!parts || typeof parts[0] !== 'string' || typeof parts[1] !== 'string') {
        throw new ParleyError('invalid_cursor', 'cursor: not a cursor this server made');
      }
      cursor = { updatedAt: parts[0], sessionId: parts[1] };
    }
    return listSessions(deps.db, request.principal.tenant, { limit: query.limit, cursor });
  });

  app.get<{ Params: { sessionId: string } }>(
    '/api/v1/chat/sessions/:sessionId',
    async (request) => {
      const session = await getSession(deps.db, request.principal.tenant, request.params.sessionId);
      if (!session) throw new ParleyError('session_not_found', 'no such session');
      return session;
    },
  );

  app.get<{ Params: { sessionId: string } }>(
    '/api/v1/chat/sessions/:sessionId/messages',
    async (request) => {
      const query = validate(pageQuery, request.query);
      const tenant = request.principal.tenant;
      let before: number | null = null;
      if (query.before !== undefined) {
        before = Number(query.before);
        if (!/^\d+$/.test(query.before))
          throw new ParleyError('invalid_cursor', 'before: not a cursor');
      }
      const session = await getSession(deps.db, tenant, request.params.sessionId);
      if (!session) throw new ParleyError('session_not_found', 'no such session');
      return listMessages(deps.db, tenant, request.params.sessionId, {
        before,
        limit: query.limit,
      });
    },
  );
}
