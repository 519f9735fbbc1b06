import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ParleyError } from '../errors.js';
import { forkSession } from '../store/forkSession.js';
import { getSession } from '../store/getSession.js';
import { listCheckpoints } from '../store/listCheckpoints.js';
import { rewindSession } from '../store/rewindSession.js';
import { checkpoint, rewindAnswer } from '../protocol/missions.js';
import { page, session } from '../protocol/rest.js';
import { route, routeOptions, typed } from './contract.js';
import type { ApiDeps } from './deps.js';
import { text } from './validate.js';

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

export const checkpointContracts = {
  list: route({
    method: 'GET',
    url: '/api/v1/chat/sessions/:sessionId/checkpoints',
    summary: "A session's checkpoints: every done, with transcript position and usage so far",
    querystring: pageQuery,
    responses: { '200': page(checkpoint) },
    errors: { '400': 'invalid_request', '404': 'session_not_found' },
  }),
  fork: route({
    method: 'POST',
    url: '/api/v1/chat/sessions/:sessionId/fork',
    summary: "A new session whose transcript is this one's up to a checkpoint",
    body: forkBody,
    responses: { '201': session },
    errors: { '400': 'invalid_request', '404': 'session_not_found, checkpoint_not_found' },
  }),
  rewind: route({
    method: 'POST',
    url: '/api/v1/chat/sessions/:sessionId/rewind',
    summary: "Journal `rewound`: the next turn's prompt starts from that checkpoint",
    body: rewindBody,
    responses: { '200': rewindAnswer },
    errors: {
      '400': 'invalid_request',
      '404': 'session_not_found, checkpoint_not_found',
      '409': 'session_busy',
    },
  }),
};

/**
 * A session's checkpoints (every `done`), fork at one into a new session, and
 * rewind to one. A session the principal may not see (another tenant's included) is the
 * same 404 as a missing one. A fork is its forker's, seen as the original is.
 */
export function checkpointRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const api = typed(app);
  const contracts = checkpointContracts;
  api.get(contracts.list.url, routeOptions(contracts.list), async (request) => {
    const query = request.query;
    return listCheckpoints(deps.db, request.session.session_id, {
      after: query.cursor === undefined ? 0 : Number(query.cursor),
      limit: query.limit,
    });
  });

  api.post(contracts.fork.url, routeOptions(contracts.fork), async (request, reply) => {
    const sessionId = request.session.session_id;
    const body = request.body;
    const { tenant, user } = request.principal;
    const forked = await forkSession(deps.db, {
      tenant,
      sessionId,
      atSequence: body.at_sequence,
      title: body.title ?? null,
      actor: { user, tenant },
    });
    const created = await getSession(deps.db, tenant, forked);
    if (!created) throw new ParleyError('session_not_found', 'no such session');
    return reply.status(201).send(created);
  });

  api.post(contracts.rewind.url, routeOptions(contracts.rewind), async (request) => {
    const sessionId = request.session.session_id;
    const body = request.body;
    const { tenant, user } = request.principal;
    return rewindSession(deps.db, {
      tenant,
      sessionId,
      toSequence: body.to_sequence,
      actor: { user, tenant },
    });
  });
}
