import type { FastifyInstance } from 'fastify';
import { errorCodes } from '../errors.js';
import { platformPaths } from './openapiPlatforms.js';
import { providerPaths } from './openapiProviders.js';
import { toolPaths } from './openapiTools.js';
import { extensionPaths, extensionSchemas } from './openapiExtensions.js';
import { missionPaths, missionSchemas } from './openapiMissions.js';
import { retentionPaths } from './openapiRetention.js';
import type { RouteContract } from './contract.js';
import { generateDocument } from './openapiGenerate.js';
import { sessionContracts } from './sessions.js';

/** The routes whose document is generated from their contracts (contract.ts). */
const contracts: RouteContract[] = [...Object.values(sessionContracts)];
const generated = generateDocument(contracts);

const error = { $ref: '#/components/schemas/Error' };
const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: error } },
});
const json = (schema: object, description = 'OK') => ({
  description,
  content: { 'application/json': { schema } },
});
const sessionIdParam = {
  name: 'session_id',
  in: 'path',
  required: true,
  schema: { type: 'string' },
};

/** The machine-readable contract (PROTOCOL.md), served at GET /api/v1/openapi.json. */
export const openapiDocument = {
  openapi: '3.1.0',
  info: {
    title: 'Parley chat protocol',
    version: '1',
    description:
      'Durable chat turns over HTTP + SSE. Send `Parley-Protocol-Version: 1`; errors are `{"error": code, "message": text}`.',
  },
  components: {
    securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
    schemas: {
      Error: {
        type: 'object',
        required: ['error', 'message'],
        properties: {
          error: { type: 'string', enum: Object.keys(errorCodes) },
          message: { type: 'string' },
        },
      },
      Admission: {
        type: 'object',
        required: ['session_id', 'turn_id', 'sequence', 'state'],
        properties: {
          session_id: { type: 'string' },
          turn_id: { type: 'string' },
          sequence: { type: 'integer' },
          state: { enum: ['accepted', 'stored'] },
        },
      },
      ...extensionSchemas,
      ...missionSchemas,
      ...generated.schemas,
    },
  },
  security: [{ bearer: [] }],
  paths: {
    ...generated.paths,
    '/api/v1/chat/turns': {
      post: {
        summary: 'Admit a turn; 202 once the message is durable',
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['turn_id'],
                properties: {
                  session_id: { type: 'string' },
                  turn_id: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,128}$' },
                  agent: { type: 'string' },
                  message: { type: 'string' },
                  option: {
                    type: 'object',
                    properties: { request_id: { type: 'string' }, value: { type: 'string' } },
                  },
                },
              },
            },
          },
        },
        responses: {
          '202': json({ $ref: '#/components/schemas/Admission' }, 'Accepted'),
          '400': errorResponse('invalid_request, empty_message or malformed_json'),
          '404': errorResponse('unknown_agent, session_not_found or option_not_found'),
          '409': errorResponse('turn_conflict, agent_mismatch or option_locked'),
          '413': errorResponse('message_too_long or payload_too_large'),
        },
      },
    },
    '/api/v1/chat/sessions/{session_id}/events': {
      get: {
        summary: 'SSE: replay after the cursor, then live',
        parameters: [
          sessionIdParam,
          { name: 'Last-Event-ID', in: 'header', schema: { type: 'string' } },
          { name: 'after', in: 'query', schema: { type: 'integer', minimum: 0 } },
        ],
        responses: {
          '200': {
            description: 'text/event-stream',
            content: { 'text/event-stream': { schema: { type: 'string' } } },
          },
          '400': errorResponse('invalid_cursor'),
          '404': errorResponse('session_not_found'),
          '409': errorResponse('cursor_ahead (with latest_sequence)'),
          '410': errorResponse(
            'resync_required (with earliest_available_sequence, latest_sequence)',
          ),
        },
      },
    },
    '/api/v1/chat/sessions/{session_id}/turns/{turn_id}/cancel': {
      post: {
        summary: 'Cancel accepted work, idempotent by command_id (cooperative for a running turn)',
        parameters: [
          sessionIdParam,
          { name: 'turn_id', in: 'path', required: true, schema: { type: 'string' } },
        ],
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['command_id'],
                properties: { command_id: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,128}$' } },
              },
            },
          },
        },
        responses: {
          '200': json({
            type: 'object',
            properties: {
              result: { enum: ['cancelled', 'duplicate', 'too_late'] },
              state: { enum: ['queued', 'running', 'done', 'error', 'cancelled', 'cancelling'] },
              sequence: { type: 'integer' },
            },
          }),
          '400': errorResponse('invalid_request'),
          '404': errorResponse('session_not_found or turn_not_found'),
          '409': errorResponse('command_conflict'),
        },
      },
    },
    '/api/v1/chat/sessions/{session_id}/inputs/{request_id}': {
      post: {
        summary: 'Answer an input request (approval, question, budget extension); single-use',
        parameters: [
          sessionIdParam,
          { name: 'request_id', in: 'path', required: true, schema: { type: 'string' } },
        ],
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['expected_sequence', 'approved'],
                properties: {
                  expected_sequence: { type: 'integer' },
                  approved: { type: 'boolean' },
                  response: { type: 'object' },
                },
              },
            },
          },
        },
        responses: {
          '200': json({
            type: 'object',
            properties: { state: { const: 'accepted' }, sequence: { type: 'integer' } },
          }),
          '403': errorResponse('forbidden (not one of the agent approver_roles)'),
          '404': errorResponse('input_not_found'),
          '409': errorResponse('stale_input'),
        },
      },
    },
    '/api/v1/admin/sessions/{session_id}/unpark': {
      post: {
        summary: 'Resume a parked session (admin role)',
        parameters: [sessionIdParam],
        responses: {
          '200': json({ $ref: '#/components/schemas/Session' }),
          '403': errorResponse('forbidden'),
          '404': errorResponse('session_not_found'),
          '409': errorResponse('session_not_parked'),
        },
      },
    },
    ...retentionPaths,
    ...providerPaths,
    ...toolPaths,
    ...platformPaths,
    '/healthz': {
      get: { summary: 'Process up', security: [], responses: { '200': json({ type: 'object' }) } },
    },
    '/readyz': {
      get: {
        summary: 'Storage reachable, migrations applied, providers configured',
        security: [],
        responses: { '200': json({ type: 'object' }), '503': errorResponse('not_ready') },
      },
    },
    '/api/v1/openapi.json': {
      get: {
        summary: 'This document (OpenAPI 3.1): the contract, machine-readable',
        security: [],
        responses: { '200': json({ type: 'object' }) },
      },
    },
    '/metrics': {
      get: {
        summary:
          "Prometheus metrics: outside dev mode, the metrics key (server.metrics_key_env) or an operator's API key",
        security: [],
        responses: {
          '200': { description: 'text/plain' },
          '401': errorResponse('unauthorized (no valid key)'),
          '403': errorResponse("forbidden (a tenant's key, not the operator's)"),
        },
      },
    },
    ...extensionPaths,
    ...missionPaths,
  },
} as const;

export function openapiRoutes(app: FastifyInstance): void {
  app.get('/api/v1/openapi.json', { config: { public: true } }, async () => openapiDocument);
}
