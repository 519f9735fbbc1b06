import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ParleyError } from '../errors.js';
import { session } from '../protocol/rest.js';
import { getSession } from '../store/getSession.js';
import { archivePersonalSession } from '../store/archivePersonalSession.js';
import { personalSession } from '../store/personalSession.js';
import { route, routeOptions, typed } from './contract.js';
import { agentsOf, type ApiDeps } from './deps.js';
import { pathId } from './validate.js';

export const personalContracts = {
  open: route({
    method: 'POST',
    url: '/api/v1/agents/:name/personal',
    summary: "The caller's one active personal session with an agent (201 when created)",
    responses: { '200': session, '201': session },
    errors: { '404': 'unknown_agent' },
  }),
  archive: route({
    method: 'POST',
    url: '/api/v1/agents/:name/personal/archive',
    summary: "Archive the caller's personal session with an agent",
    responses: { '200': z.object({ session_id: z.string(), archived: z.literal(true) }) },
    errors: { '404': 'personal_session_not_found' },
  }),
};

/**
 * Seed 003's personal threads: the caller's one active session with an agent
 * (201 when this call created it, 200 when it existed), and archiving it.
 */
export function personalRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const api = typed(app);
  const contracts = personalContracts;
  api.post(contracts.open.url, routeOptions(contracts.open), async (request, reply) => {
    const name = pathId(request.params.name, 'name');
    const { tenant, user } = request.principal;
    const agent = agentsOf(deps).get(tenant, name);
    if (!agent) throw new ParleyError('unknown_agent', `no agent named "${name}"`);
    const { sessionId, created } = await personalSession(deps.db, {
      tenant,
      user,
      agent: agent.name,
      greeting: agent.greeting,
    });
    const found = await getSession(deps.db, tenant, sessionId);
    if (!found) throw new ParleyError('session_not_found', 'no such session');
    return reply.status(created ? 201 : 200).send(found);
  });

  api.post(contracts.archive.url, routeOptions(contracts.archive), async (request) => {
    const name = pathId(request.params.name, 'name');
    const { tenant, user } = request.principal;
    const sessionId = await archivePersonalSession(deps.db, { tenant, user, agent: name });
    return { session_id: sessionId, archived: true as const };
  });
}
