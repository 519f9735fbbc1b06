import type { FastifyInstance } from 'fastify';
import { registry } from '../metrics.js';
import { migrationsApplied } from '../store/migrate.js';
import type { ApiDeps } from './deps.js';

/** PROTOCOL.md §6. These answer without a principal: probes and scrapers carry no key. */
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

  app.get('/metrics', { config: { public: true } }, async (_request, reply) => {
    return reply.type(registry.contentType).send(await registry.metrics());
  });
}
