import type { FastifyInstance } from 'fastify';
import { defaultAgentName } from '../config/load.js';
import type { AgentConfig } from '../config/types.js';
import type { ApiDeps } from './deps.js';
import { hasRole } from './principal.js';

/**
 * What a client may know about an agent to pick one and to explain its cards: never its
 * instructions (they can hold a product's private prompt) nor its model's credentials.
 */
function describeAgent(agent: AgentConfig, isDefault: boolean, mayAnswer: boolean) {
  return {
    name: agent.name,
    default: isDefault,
    greeting: agent.greeting,
    tools: Object.entries(agent.tools).map(([name, policy]) => ({ name, policy })),
    approver_roles: agent.approverRoles,
    may_answer: mayAnswer,
    accepts_images: false,
  };
}

/**
 * Extensions for clients such as the web app (docs/PROTOCOL.md, "Extensions"): the agents
 * a session can be created with, and who the caller is (to tell "you" from others in a
 * room without decoding anything client-side).
 */
export function agentRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.get('/api/v1/agents', async (request) => {
    const principal = request.principal;
    const fallback = defaultAgentName(deps.config);
    return {
      items: Object.values(deps.config.agents).map((agent) =>
        describeAgent(
          agent,
          agent.name === fallback,
          agent.approverRoles === null ||
            agent.approverRoles.some((role) => hasRole(principal, role)),
        ),
      ),
    };
  });

  app.get('/api/v1/me', async (request) => {
    const { tenant, user, roles } = request.principal;
    return { tenant, user, roles, mode: deps.config.auth.mode };
  });
}
