import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { ParleyError } from '../errors.js';
import { budgetReserved, registry } from '../metrics.js';
import type { Queryable } from '../store/db.js';
import { migrationsApplied } from '../store/migrate.js';
import { reservedTotals } from '../store/reservedTotals.js';
import { z } from 'zod';
import { route, routeOptions, typed } from './contract.js';
import type { ApiDeps } from './deps.js';
import { authenticate, requireOperator } from './principal.js';

/**
 * PROTOCOL.md §6. Probes answer without a principal. `/metrics` tells about the whole
 * deployment: outside dev mode it needs the metrics key (`server.metrics_key_env`) or an
 * operator's API key (401 without a valid key, 403 for a tenant's); in dev mode it is
 * open unless the metrics key is set.
 */
const checks = z.object({
  storage: z.boolean(),
  migrations: z.boolean(),
  providers: z.boolean(),
});

export const healthContracts = {
  healthz: route({
    method: 'GET',
    url: '/healthz',
    summary: 'Process up',
    public: true,
    responses: { '200': z.object({ status: z.literal('ok') }) },
  }),
  readyz: route({
    method: 'GET',
    url: '/readyz',
    summary: 'Storage reachable, migrations applied, providers configured',
    public: true,
    responses: {
      '200': z.object({
        status: z.literal('ready'),
        engine: z.enum(['pglite', 'postgres']),
        checks,
      }),
      '503': z
        .object({ error: z.literal('not_ready'), message: z.string(), checks })
        .meta({ description: 'not_ready, with the checks that failed' }),
    },
  }),
  metrics: route({
    method: 'GET',
    url: '/metrics',
    summary:
      "Prometheus metrics: outside dev mode, the metrics key (server.metrics_key_env) or an operator's API key",
    public: true,
    responses: { '200': { description: 'text/plain' } },
    errors: {
      '401': 'unauthorized (no valid key)',
      '403': "forbidden (a tenant's key, not the operator's)",
    },
  }),
};

export function healthRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const api = typed(app);
  const contracts = healthContracts;
  api.get(contracts.healthz.url, routeOptions(contracts.healthz), async () => ({
    status: 'ok' as const,
  }));

  api.get(contracts.readyz.url, routeOptions(contracts.readyz), async (_request, reply) => {
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
    return { status: 'ready' as const, engine: deps.db.engine, checks };
  });

  const metricsKey = deps.config.server.metricsKeySha256;
  api.get(contracts.metrics.url, routeOptions(contracts.metrics), async (request, reply) => {
    const scraper = metricsKey !== null && bearerMatches(request.headers.authorization, metricsKey);
    if (!scraper) {
      if (deps.config.auth.mode === 'keys') {
        requireOperator(authenticate(deps.config, request));
      } else if (metricsKey !== null) {
        throw new ParleyError('unauthorized', 'the metrics need their key (Authorization: Bearer)');
      }
    }
    await refreshBudgetGauge(deps.db);
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

/**
 * `parley_budget_reserved` as the database holds it at this scrape: the reservations of
 * every worker, so each API process reports the deployment's figure (a tenant with nothing
 * in flight has no series).
 */
async function refreshBudgetGauge(db: Queryable): Promise<void> {
  const totals = await reservedTotals(db);
  budgetReserved.reset();
  for (const total of totals) {
    budgetReserved.set({ tenant: total.tenant, metric: 'cost_usd' }, total.cost_usd);
    budgetReserved.set({ tenant: total.tenant, metric: 'tokens' }, total.tokens);
  }
}
