import { A2A_PROTOCOL_VERSION, AgentCard } from '@a2a-js/sdk';
import type { FastifyInstance } from 'fastify';
import type { AgentConfig, Principal } from '../../config/types.js';
import { ParleyError } from '../../errors.js';
import { routeOptions, typed } from '../contract.js';
import { agentsOf, type ApiDeps } from '../deps.js';
import { a2aBase, a2aContracts, cardPath } from './contracts.js';
import { pushEnabled } from './pushNotifications.js';
import { isV03Version } from './v03.js';

/**
 * The card routes: the card (1.0's, or 0.3's for an `A2A-Version` of 0.3's range, as the
 * SDK's own server answers), 0.3's card at its own path for a 0.3 client that sends no
 * version, and the endpoint's redirect to the card.
 */
export function a2aCardRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const api = typed(app);
  const { card, v03Card, endpoint } = a2aContracts;
  const cardOf = (request: CardRequest, v03: boolean) => {
    const agent = agentOf(deps, request);
    const url = `${request.protocol}://${request.host}${a2aBase}/${encodeURIComponent(agent.name)}`;
    const offers = { pushNotifications: pushEnabled(deps.config.a2a.pushNotifications) };
    return v03 ? v03AgentCardOf(agent, url, offers) : agentCardOf(agent, url, offers);
  };

  api.get(card.url, routeOptions(card), async (request, reply) => {
    const version = request.headers['a2a-version'];
    void reply.header('vary', 'A2A-Version');
    return cardOf(request, typeof version === 'string' && isV03Version(version));
  });
  api.get(v03Card.url, routeOptions(v03Card), async (request) => cardOf(request, true));
  api.get(endpoint.url, routeOptions(endpoint), async (request, reply) => {
    const agent = agentOf(deps, request);
    return reply.redirect(`${a2aBase}/${encodeURIComponent(agent.name)}/${cardPath}`, 302);
  });
}

/** What a card route reads of its request. */
interface CardRequest {
  principal: Principal;
  params: { agent: string };
  protocol: string;
  host: string;
}

function agentOf(deps: ApiDeps, request: CardRequest) {
  const agent = agentsOf(deps).get(request.principal.tenant, request.params.agent);
  if (!agent) throw new ParleyError('unknown_agent', `no agent named "${request.params.agent}"`);
  return agent;
}

/**
 * An agent's A2A card (docs/protocols.md, "A2A"): where its JSON-RPC endpoint is, what it
 * can do (push notifications once the operator allows hosts for them), and how to
 * authenticate (a Parley API key as a bearer token). Its description is the agent's
 * greeting, never its instructions (a prompt is the operator's, not a caller's).
 */
export function agentCardOf(
  agent: AgentConfig,
  endpoint: string,
  offers: { pushNotifications: boolean },
): Record<string, unknown> {
  const description = agent.greeting ?? `The Parley agent "${agent.name}".`;
  const card: AgentCard = {
    name: agent.name,
    description,
    // The same endpoint answers 0.3's methods too (v03.ts): listed second, 1.0 first.
    supportedInterfaces: [A2A_PROTOCOL_VERSION, '0.3'].map((protocolVersion) => ({
      url: endpoint,
      protocolBinding: 'JSONRPC',
      tenant: '',
      protocolVersion,
    })),
    provider: { organization: 'Parley', url: new URL(endpoint).origin },
    version: '1',
    capabilities: {
      streaming: true,
      pushNotifications: offers.pushNotifications,
      extensions: [],
      extendedAgentCard: false,
    },
    securitySchemes: {
      bearer: {
        scheme: {
          $case: 'httpAuthSecurityScheme',
          value: { description: 'a Parley API key', scheme: 'Bearer', bearerFormat: '' },
        },
      },
    },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      {
        id: agent.name,
        name: agent.name,
        description,
        tags: ['parley', agent.namespace],
        examples: [],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      },
    ],
    signatures: [],
  };
  return AgentCard.toJSON(card) as Record<string, unknown>;
}

/**
 * The agent's card as A2A 0.3 wrote it (`url`, `preferredTransport`, `protocolVersion`,
 * security schemes by `type`): the same agent, endpoint and offers as `agentCardOf`.
 */
export function v03AgentCardOf(
  agent: AgentConfig,
  endpoint: string,
  offers: { pushNotifications: boolean },
): Record<string, unknown> {
  const description = agent.greeting ?? `The Parley agent "${agent.name}".`;
  return {
    protocolVersion: '0.3.0',
    name: agent.name,
    description,
    url: endpoint,
    preferredTransport: 'JSONRPC',
    provider: { organization: 'Parley', url: new URL(endpoint).origin },
    version: '1',
    capabilities: {
      streaming: true,
      pushNotifications: offers.pushNotifications,
      stateTransitionHistory: false,
    },
    securitySchemes: {
      bearer: { type: 'http', scheme: 'Bearer', description: 'a Parley API key' },
    },
    security: [{ bearer: [] }],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: agent.name, name: agent.name, description, tags: ['parley', agent.namespace] }],
    supportsAuthenticatedExtendedCard: false,
  };
}
