import type { FastifyInstance } from 'fastify';
import { errorCodes } from '../errors.js';
import { z } from 'zod';
import { route, routeOptions, typed, type RouteContract } from './contract.js';
import { generateDocument } from './openapiGenerate.js';
import { sessionContracts } from './sessions.js';
import { turnContracts } from './turns.js';
import { cancelContracts } from './cancel.js';
import { inputContracts } from './inputs.js';
import { agentContracts } from './agents.js';
import { eventContracts } from './events.js';
import { healthContracts } from './health.js';
import { adminContracts } from './admin.js';
import { modelContracts } from './models.js';
import { usageContracts } from './usage.js';
import { fileContracts } from './files.js';
import { memoryContracts } from './memories.js';
import { missionContracts } from './missions.js';
import { executionContracts } from './executions.js';
import { scheduleContracts } from './schedules.js';
import { checkpointContracts } from './checkpoints.js';
import { personalContracts } from './personal.js';
import { panelContracts } from './panels.js';
import { photoContracts } from './photos.js';
import { userEventContracts } from './userEvents.js';
import { preferenceContracts } from './preferences.js';
import { speechContracts } from './speech.js';
import { workspaceContracts } from './workspaces.js';
import { definitionContracts } from './definitions.js';
import { budgetContracts } from './budgets.js';
import { webhookContracts } from './webhooks.js';
import { adapterContracts } from './adapters.js';
import { attachmentContracts } from './attachments.js';
import { openaiContracts } from './openai/contracts.js';
import { openaiFileContracts } from './openai/files.js';
import { aguiContracts } from './agui/contracts.js';
import { mcpContracts } from './mcp/routes.js';
import { a2aContracts } from './a2a/contracts.js';

export const openapiContracts = {
  document: route({
    method: 'GET',
    url: '/api/v1/openapi.json',
    summary: 'This document (OpenAPI 3.1): the contract, machine-readable',
    public: true,
    responses: { '200': z.record(z.string(), z.unknown()) },
  }),
};

/** Every route's contract (contract.ts): the document is generated from them. */
const contracts: RouteContract[] = [
  sessionContracts,
  turnContracts,
  cancelContracts,
  inputContracts,
  agentContracts,
  eventContracts,
  healthContracts,
  adminContracts,
  openapiContracts,
  modelContracts,
  usageContracts,
  fileContracts,
  memoryContracts,
  missionContracts,
  executionContracts,
  scheduleContracts,
  checkpointContracts,
  personalContracts,
  preferenceContracts,
  speechContracts,
  workspaceContracts,
  panelContracts,
  photoContracts,
  userEventContracts,
  definitionContracts.agent,
  definitionContracts.mission,
  budgetContracts,
  webhookContracts,
  adapterContracts,
  attachmentContracts,
  openaiContracts,
  openaiFileContracts,
  aguiContracts,
  mcpContracts,
  a2aContracts,
].flatMap((group) => Object.values(group));
const generated = generateDocument(contracts);

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
      ...generated.schemas,
    },
  },
  security: [{ bearer: [] }],
  paths: generated.paths,
};

export function openapiRoutes(app: FastifyInstance): void {
  const served = openapiContracts.document;
  typed(app).get(served.url, routeOptions(served), async () => openapiDocument);
}
