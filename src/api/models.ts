import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ParleyError } from '../errors.js';
import { listModels, type CatalogModel } from '../store/listModels.js';
import { route, routeOptions, typed } from './contract.js';
import type { ApiDeps } from './deps.js';
import { text } from './validate.js';

const listQuery = z
  .object({
    provider: text().min(1).max(128).optional(),
    include_removed: z.enum(['true', 'false']).optional(),
  })
  .strict();

const syncBody = z.object({ provider: text().min(1).max(128).optional() }).strict();

const timestamp = z.string().meta({ format: 'date-time' });

const catalogModel = z.object({
  model: z.string().meta({ description: 'provider/model' }),
  provider: z.string(),
  model_id: z.string(),
  kind: z.string(),
  display_name: z.string().nullable(),
  capabilities: z.object({
    tools: z.boolean().nullable(),
    vision: z.boolean().nullable(),
    reasoning: z.boolean().nullable(),
    context_window: z.number().int().nullable(),
    max_output_tokens: z.number().int().nullable(),
  }),
  source: z.enum(['listing', 'config']),
  status: z.enum(['active', 'removed']),
  first_seen_at: timestamp,
  last_seen_at: timestamp,
  removed_at: timestamp.nullable(),
  circuit: z.enum(['closed', 'open', 'half_open']).meta({
    description:
      'The provider\'s circuit as a worker last reported it: `open` while its calls fail at once (providers.md, "Circuit protection")',
  }),
});

const syncReport = z.object({
  provider: z.string(),
  ok: z.boolean(),
  error: z
    .string()
    .nullable()
    .meta({ description: 'why the sync failed (a provider and a status, never a body)' }),
  added: z.array(z.string()),
  removed: z.array(z.string()),
  active: z.number().int(),
});

export const modelContracts = {
  list: route({
    method: 'GET',
    url: '/api/v1/models',
    summary: 'The model catalog (active models; removed ones with include_removed=true)',
    querystring: listQuery,
    responses: { '200': z.object({ items: z.array(catalogModel) }) },
    errors: { '400': 'invalid_request' },
  }),
  sync: route({
    method: 'POST',
    url: '/api/v1/admin/models/sync',
    summary:
      "Refresh the deployment-wide catalog from the providers' model lists (the operator's key only)",
    body: syncBody,
    bodyOptional: true,
    responses: { '200': z.object({ providers: z.array(syncReport) }) },
    errors: { '400': 'invalid_request', '403': "forbidden (not the operator's key)" },
  }),
};

/**
 * The model catalog: `GET /api/v1/models` for any principal (which models exist is not
 * tenant data), `POST /api/v1/admin/models/sync` for the deployment's operator
 * (`adminModelRoutes`, registered inside the admin plugin; an operator route). `parley models` goes through these
 * because embedded storage belongs to one process.
 */
export function modelRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const list = modelContracts.list;
  typed(app).get(list.url, routeOptions(list), async (request) => {
    const query = request.query;
    const models = await listModels(deps.db, {
      provider: query.provider ?? null,
      includeRemoved: query.include_removed === 'true',
    });
    return { items: models.map(toWire) };
  });
}

export function adminModelRoutes(app: FastifyInstance, deps: ApiDeps): void {
  // The catalog is deployment-wide: only the operator syncs it (app.ts checks the key).
  const sync = modelContracts.sync;
  typed(app).post(sync.url, routeOptions(sync, { operator: true }), async (request) => {
    const body = request.body;
    if (!deps.syncModels) throw new ParleyError('not_ready', 'this process cannot sync models');
    const provider = body.provider ?? null;
    if (provider !== null && !Object.hasOwn(deps.config.providers, provider)) {
      throw new ParleyError('invalid_request', `provider: no provider named "${provider}"`, {
        field: 'provider',
      });
    }
    return { providers: await deps.syncModels(provider) };
  });
}

function toWire(model: CatalogModel) {
  return {
    model: `${model.provider}/${model.model_id}`,
    provider: model.provider,
    model_id: model.model_id,
    kind: model.kind,
    display_name: model.display_name,
    capabilities: {
      tools: model.tools,
      vision: model.vision,
      reasoning: model.reasoning,
      context_window: model.context_window,
      max_output_tokens: model.max_output_tokens,
    },
    source: model.source,
    status: model.status,
    first_seen_at: model.first_seen_at.toISOString(),
    last_seen_at: model.last_seen_at.toISOString(),
    removed_at: model.removed_at?.toISOString() ?? null,
    circuit: model.circuit,
  };
}
