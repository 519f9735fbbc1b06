import { z } from 'zod';
import { route } from '../contract.js';
import { rpcEnvelope } from './jsonRpc.js';

/** Where an agent's A2A endpoint is: `/a2a/{agent}`, its card under it. */
export const a2aBase = '/a2a';
export const cardPath = '.well-known/agent-card.json';
/** Where an A2A 0.3 client finds the agent: its 0.3 card under `/a2a/{agent}/v0.3`. */
export const v03CardPath = `v0.3/${cardPath}`;

const errors = {
  '400':
    'invalid_request, invalid_cursor (A2A -32602), method_not_found (-32601), unsupported_operation (-32004), push_notification_not_supported (-32003), version_not_supported (-32009), malformed_json (-32700)',
  '401': 'unauthorized',
  '404': 'unknown_agent, turn_not_found (A2A -32001: a task, or a push notification config)',
  '409': 'task_not_cancelable (A2A -32002), stale_input, turn_conflict, session_closed',
};

export const a2aContracts = {
  card: route({
    method: 'GET',
    url: `${a2aBase}/:agent/${cardPath}`,
    summary: "A2A: the agent's card (its JSON-RPC endpoint, capabilities, one skill)",
    description:
      'The A2A 1.0 card; with an `A2A-Version` of 0.3 (0.3 up to 1.0), the A2A 0.3 card.',
    parameters: [{ name: 'A2A-Version', in: 'header', schema: { type: 'string' } }],
    responses: { '200': z.record(z.string(), z.unknown()).meta({ id: 'A2aAgentCard' }) },
    errors: { '401': 'unauthorized', '404': 'unknown_agent' },
  }),
  v03Card: route({
    method: 'GET',
    url: `${a2aBase}/:agent/${v03CardPath}`,
    summary: "A2A: the agent's A2A 0.3 card (`url`, `protocolVersion: 0.3.0`), for 0.3 clients",
    description:
      "The same agent and endpoint as the 1.0 card, in 0.3's shape: a 0.3 client given `<parley>/a2a/{agent}/v0.3` as its base URL finds it at the well-known path.",
    responses: { '200': z.record(z.string(), z.unknown()).meta({ id: 'A2aAgentCardV03' }) },
    errors: { '401': 'unauthorized', '404': 'unknown_agent' },
  }),
  endpoint: route({
    method: 'GET',
    url: `${a2aBase}/:agent`,
    summary: "A2A: redirects to the agent's card",
    responses: { '302': { description: 'to /a2a/{agent}/.well-known/agent-card.json' } },
    errors: { '401': 'unauthorized', '404': 'unknown_agent' },
  }),
  rpc: route({
    method: 'POST',
    url: `${a2aBase}/:agent`,
    summary:
      'A2A JSON-RPC (protocol 1.0): SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask, and the task push notification config methods (Create, Get, List, Delete); and A2A 0.3: message/send, message/stream, tasks/get, tasks/cancel, tasks/resubscribe, tasks/pushNotificationConfig/{set,get,list,delete}',
    description:
      "A task is a Parley turn (its id), its contextId the session. A 0.3 method name is answered in 0.3's shapes (the same handlers). Errors are JSON-RPC error responses with A2A codes, sent with Parley's HTTP status.",
    body: rpcEnvelope,
    handlerValidates: true,
    responses: {
      '200': z.record(z.string(), z.unknown()).meta({ id: 'A2aRpcResponse' }),
      '201': { description: 'JSON-RPC responses as text/event-stream (the streaming methods)' },
    },
    errors,
  }),
};
