import { A2A_PROTOCOL_VERSION, AgentCard } from '@a2a-js/sdk';
import type { AgentConfig } from '../../config/types.js';

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
    supportedInterfaces: [
      {
        url: endpoint,
        protocolBinding: 'JSONRPC',
        tenant: '',
        protocolVersion: A2A_PROTOCOL_VERSION,
      },
    ],
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
