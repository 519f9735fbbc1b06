import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { forkSession } from '../store/forkSession.js';
import { getSession } from '../store/getSession.js';
import { listCheckpoints } from '../store/listCheckpoints.js';
import { rewindSession } from '../store/rewindSession.js';
import type { ApiDeps } from './deps.js';
import { text, validate } from './validate.js';

const sequence = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);
const pageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z
    .string()
    .regex(/^\d{1,15}$/, 'not a cursor this server made')
    .optional(),
});
const forkBody = z.object({ at_sequence: sequence, title: text().max(500).optional() }).strict();
const rewindBody = z.object({ to_sequence: sequence }).strict();

/**
 * A session's checkpoints (every `done`), fork at one into a new session, and
 * rewind to one. A session the principal may not see (another tenant's included) is the
 * same 404 as a missing one. A fork is its forker's, seen as the original is.
 */
export function checkpointRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.get<{ Params: { sessionId: string } }>(
    '/api/v1/chat/sessions/:sessionId/checkpoints',
    async (request) => {
      const query = validate(pageQuery, request.query);
      return listCheckpoints(deps.db, request.session.session_id, {
        after: query.cursor === undefined ? 0 : Number(query.cursor),
        limit: query.limit,
      });
    },
  );

  app.post<{ Params: { sessionId: string } }>(
    '/api/v1/chat/sessions/:sessionId/fork',
    async (request, reply) => {
      const sessionId = request.session.session_id;
      const body = validate(forkBody, request.body);
      const { tenant, user } = request.principal;
      const forked = await forkSession(deps.db, {
        tenant,
        sessionId,
        atSequence: body.at_sequence,
        title: body.title ?? null,
        actor: { user, tenant },
      });
      return reply.status(201).send(await getSession(deps.db, tenant, forked));
    },
  );

  app.post<{ Params: { sessionId: string } }>(
    '/api/v1/chat/sessions/:sessionId/rewind',
    async (request) => {
      const sessionId = request.session.session_id;
      const body = validate(rewindBody, request.body);
      const { tenant, user } = request.principal;
      return rewindSession(deps.db, {
        tenant,
        sessionId,
        toSequence: body.to_sequence,
        actor: { user, tenant },
      });
    },
  );
}
