import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ParleyError } from '../errors.js';
import { followersOf, pruneRules } from '../retention/plan.js';
import { prune } from '../retention/prune.js';
import { getSession } from '../store/getSession.js';
import { unparkSession } from '../store/parkSession.js';
import type { ApiDeps } from './deps.js';
import { hasRole } from './principal.js';
import { session } from '../protocol/rest.js';
import { retainedTables } from '../retention/prune.js';
import { route, routeOptions, typed } from './contract.js';
import { pathId } from './validate.js';

const pruneBody = z
  .object({
    older_than_days: z.number().nonnegative().max(1_000_000).optional(),
    older_than_seconds: z.number().nonnegative().max(100_000_000_000).optional(),
    rules: z
      .array(z.enum(pruneRules))
      .min(1)
      .max(pruneRules.length)
      .optional()
      .meta({ description: 'default ["events", "deliveries"]' }),
    batch_size: z
      .number()
      .int()
      .positive()
      .max(100_000)
      .optional()
      .meta({ description: 'rows per statement (default retention.prune_batch_size)' }),
  })
  .strict()
  .refine(
    (body) => (body.older_than_days === undefined) !== (body.older_than_seconds === undefined),
    {
      message: 'give exactly one of older_than_days or older_than_seconds',
    },
  );

const pruneReport = z.object({
  pruned_events: z.number().int(),
  sessions: z
    .number()
    .int()
    .meta({ description: 'sessions whose journal was cut back (earliest_sequence raised)' }),
  skipped: z.boolean().meta({ description: 'another pruner was at work: this run stopped' }),
  removed: z
    .object(Object.fromEntries(retainedTables.map((table) => [table, z.number().int()])))
    .meta({ description: 'rows removed per table' }),
  batches: z.number().int(),
});

export const adminContracts = {
  unpark: route({
    method: 'POST',
    url: '/api/v1/admin/sessions/:sessionId/unpark',
    summary: 'Resume a parked session (admin role)',
    responses: { '200': session },
    errors: { '403': 'forbidden', '404': 'session_not_found', '409': 'session_not_parked' },
  }),
  prune: route({
    method: 'POST',
    url: '/api/v1/admin/prune',
    summary:
      "Remove the tenant's rows older than an age, by rule (admin role; the usage rule: the operator's key); old cursors then answer 410",
    description: 'Give exactly one of older_than_days and older_than_seconds.',
    body: pruneBody,
    responses: { '200': pruneReport },
    errors: { '400': 'invalid_request', '403': 'forbidden' },
  }),
};

/**
 * Operator endpoints behind `parley sessions unpark` and `parley prune`. They go through
 * the API (not the database) so they work on embedded storage, which one process owns.
 * Scoped to the principal's tenant.
 *
 * Registered as their own plugin: the `admin` role is checked by a hook encapsulated with
 * these routes, so it applies to them however their URL was spelled (`/api/v1/%61dmin/...`
 * reaches the same route and the same check). The dev principal has every role.
 */
export async function adminPlugin(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  app.addHook('onRequest', async (request) => {
    // Operator routes are checked for the operator's key instead (app.ts), not for a role.
    if (request.routeOptions.config.operator) return;
    if (!hasRole(request.principal, 'admin')) {
      throw new ParleyError('forbidden', 'this needs the admin role');
    }
  });

  const api = typed(app);
  api.post(adminContracts.unpark.url, routeOptions(adminContracts.unpark), async (request) => {
    const tenant = request.principal.tenant;
    const sessionId = pathId(request.params.sessionId, 'session_id');
    const session = await getSession(deps.db, tenant, sessionId);
    if (!session) throw new ParleyError('session_not_found', 'no such session');
    if (!(await unparkSession(deps.db, tenant, session.session_id))) {
      throw new ParleyError('session_not_parked', `the session is ${session.state}, not parked`);
    }
    const unparked = await getSession(deps.db, tenant, session.session_id);
    if (!unparked) throw new ParleyError('session_not_found', 'no such session');
    return unparked;
  });

  // One age for every rule asked for (older than it goes), the principal's tenant only
  // (the worker's periodic run covers every tenant); billing rows (`usage`) are the
  // operator's.
  // The answer keeps the first version's fields (events pruned, journals cut back) beside
  // the per-table report.
  api.post(adminContracts.prune.url, routeOptions(adminContracts.prune), async (request) => {
    const body = request.body;
    const ageMs =
      body.older_than_days !== undefined
        ? body.older_than_days * 86_400_000
        : (body.older_than_seconds ?? 0) * 1000;
    const olderThan = new Date(Date.now() - ageMs);
    const rules = new Set(body.rules ?? ['events', 'deliveries']);
    if (rules.has('usage') && !request.principal.operator) {
      throw new ParleyError('forbidden', "usage rows are billing records: the operator's key");
    }
    const report = await prune(
      deps.db,
      {
        events: rules.has('events') ? olderThan : null,
        deliveries: rules.has('deliveries') ? olderThan : null,
        sessions: rules.has('sessions') ? olderThan : null,
        usage: rules.has('usage') ? olderThan : null,
        chatState: false,
      },
      {
        tenant: request.principal.tenant,
        batchSize: body.batch_size ?? deps.config.retention.pruneBatchSize,
        followers: followersOf(deps.config),
      },
    );
    return {
      pruned_events: report.removed.events,
      sessions: report.journals,
      skipped: report.skipped,
      removed: report.removed,
      batches: report.batches,
    };
  });
}
