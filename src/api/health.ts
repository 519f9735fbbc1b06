import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { ParleyError } from '../errors.js';
import { registry } from '../metrics.js';
import { migrationsApplied } from '../store/migrate.js';
import type { ApiDeps } from './deps.js';
import { authenticate, requireOperator } from './principal.js';

/**
 * PROTOCOL.md §6. Probes answer without a principal. `/metrics` tells about the whole
 * deployment: outside dev mode it needs the metrics key (`server.metrics_key_env`) or an
 * operator's API key (401 without a valid key, 403 for a tenant's); in dev mode it is
 * open unless the metrics key is set.
 */
export function healthRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.get('/healthz', { config: { public: true } }, async () => ({ status: 'ok' }));

  app.get('/readyz', { config: { public: true } }, async (_request, reply) => {
    let storage = false;
    try {
      await deps.db.query('select 1');
      storage = true;
    } catch {
      storage = false;
    }
    const migrations = storage && (await migrationsApplied(deps.db));
    const providers = deps.providersReady();
    const ready = storage && migrations && providers;
    const checks = { storage, migrations, providers };
    if (!ready) {
      return reply.status(503).send({ error: 'not_ready', message: 'not ready to serve', checks });
    }
    return { status: 'ready', engine: deps.db.engine, checks };
  });

  const metricsKey = deps.config.server.metricsKeySha256;
  app.get('/metrics', { config: { public: true } }, async (request, reply) => {
    const scraper = metricsKey !== null && bearerMatches(request.headers.authorization, metricsKey);
    if (!scraper) {
      if (deps.config.auth.mode === 'keys') {
        requireOperator(authenticate(deps.config, request));
      } else if (metricsKey !== null) {
        throw new ParleyError('unauthorized', 'the metrics need their key (Authorization: Bearer)');
      }
    }
    return reply.type(registry.contentType).send(await registry.metrics());
  });
}

function bearerMatches(header: string | undefined, sha256: string): boolean {
  const match = typeof header === 'string' ? /^Bearer\s+(\S+)$/i.exec(header) : null;
  if (!match) return false;
  const digest = createHash('sha256')
    .update(match[1] as string)
    .digest();
  return timingSafeEqual(digest, Buffer.from(sha256, 'hex'));
}
