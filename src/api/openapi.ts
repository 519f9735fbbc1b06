import type { FastifyInstance } from 'fastify';
import { errorCodes } from '../errors.js';
import { platformPaths } from './openapiPlatforms.js';
import { providerPaths } from './openapiProviders.js';
import { toolPaths } from './openapiTools.js';
import { missionPaths, missionSchemas } from './openapiMissions.js';
import { retentionPaths } from './openapiRetention.js';
import type { RouteContract } from './contract.js';
import { generateDocument } from './openapiGenerate.js';
import { sessionContracts } from './sessions.js';
import { turnContracts } from './turns.js';
import { cancelContracts } from './cancel.js';
import { inputContracts } from './inputs.js';
import { agentContracts } from './agents.js';

/** The routes whose document is generated from their contracts (contract.ts). */
const contracts: RouteContract[] = [
  sessionContracts,
  turnContracts,
  cancelContracts,
  inputContracts,
  agentContracts,
].flatMap((group) => Object.values(group));
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

/** Paths of the routes not yet declared with a contract, written by hand. */
const handWrittenPaths: Record<string, Record<string, object>> = {
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
        '410': errorResponse('resync_required (with earliest_available_sequence, latest_sequence)'),
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
  ...missionPaths,
};

/** Both sources' operations, path by path: a generated operation replaces a written one. */
function mergePaths(
  ...sources: Record<string, Record<string, object>>[]
): Record<string, Record<string, object>> {
  const merged: Record<string, Record<string, object>> = {};
  for (const source of sources) {
    for (const [path, operations] of Object.entries(source)) {
      merged[path] = { ...merged[path], ...operations };
    }
  }
  return merged;
}

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
      ...missionSchemas,
      ...generated.schemas,
    },
  },
  security: [{ bearer: [] }],
  paths: mergePaths(handWrittenPaths, generated.paths),
};

export function openapiRoutes(app: FastifyInstance): void {
  app.get('/api/v1/openapi.json', { config: { public: true } }, async () => openapiDocument);
}
