import { z } from 'zod';
import { route } from '../contract.js';
import { rpcEnvelope } from './jsonRpc.js';

/** Where an agent's A2A endpoint is: `/a2a/{agent}`, its card under it. */
export const a2aBase = '/a2a';
export const cardPath = '.well-known/agent-card.json';

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
    responses: { '200': z.record(z.string(), z.unknown()).meta({ id: 'A2aAgentCard' }) },
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
      'A2A JSON-RPC (protocol 1.0): SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask, and the task push notification config methods (Create, Get, List, Delete)',
    description:
      "A task is a Parley turn (its id), its contextId the session. Errors are JSON-RPC error responses with A2A codes, sent with Parley's HTTP status.",
    body: rpcEnvelope,
    handlerValidates: true,
    responses: {
      '200': z.record(z.string(), z.unknown()).meta({ id: 'A2aRpcResponse' }),
      '201': { description: 'JSON-RPC responses as text/event-stream (the streaming methods)' },
    },
    errors,
  }),
};
