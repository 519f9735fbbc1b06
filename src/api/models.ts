import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ParleyError } from '../errors.js';
import { listModels, type CatalogModel } from '../store/listModels.js';
import type { ApiDeps } from './deps.js';
import { text, validate } from './validate.js';

const listQuery = z
  .object({
    provider: text().min(1).max(128).optional(),
    include_removed: z.enum(['true', 'false']).optional(),
  })
  .strict();

const syncBody = z.object({ provider: text().min(1).max(128).optional() }).strict();

/**
 * The model catalog: `GET /api/v1/models` for any principal (which models exist is not
 * tenant data), `POST /api/v1/admin/models/sync` for the deployment's operator
 * (`adminModelRoutes`, registered inside the admin plugin; an operator route). `parley models` goes through these
 * because embedded storage belongs to one process.
 */
export function modelRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.get('/api/v1/models', async (request) => {
    const query = validate(listQuery, request.query);
    const models = await listModels(deps.db, {
      provider: query.provider ?? null,
      includeRemoved: query.include_removed === 'true',
    });
    return { items: models.map(toWire) };
  });
}

export function adminModelRoutes(app: FastifyInstance, deps: ApiDeps): void {
  // The catalog is deployment-wide: only the operator syncs it (app.ts checks the key).
  app.post('/api/v1/admin/models/sync', { config: { operator: true } }, async (request) => {
    const body = validate(syncBody, request.body);
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
  };
}
