import type { FastifyInstance } from 'fastify';
import { ParleyError } from '../errors.js';
import { getSession } from '../store/getSession.js';
import { archivePersonalSession } from '../store/archivePersonalSession.js';
import { personalSession } from '../store/personalSession.js';
import { agentsOf, type ApiDeps } from './deps.js';
import { pathId } from './validate.js';

/**
 * Seed 003's personal threads: the caller's one active session with an agent
 * (201 when this call created it, 200 when it existed), and archiving it.
 */
export function personalRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.post<{ Params: { name: string } }>(
    '/api/v1/agents/:name/personal',
    async (request, reply) => {
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
      return reply.status(created ? 201 : 200).send(await getSession(deps.db, tenant, sessionId));
    },
  );

  app.post<{ Params: { name: string } }>(
    '/api/v1/agents/:name/personal/archive',
    async (request) => {
      const name = pathId(request.params.name, 'name');
      const { tenant, user } = request.principal;
      const sessionId = await archivePersonalSession(deps.db, { tenant, user, agent: name });
      return { session_id: sessionId, archived: true };
    },
  );
}
