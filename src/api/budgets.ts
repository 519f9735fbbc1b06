import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { budgetId, maxBudgetLimit } from '../config/schema.js';
import { ParleyError } from '../errors.js';
import {
  budgetMetric as metric,
  budgetPeriod as period,
  budgetScope as scope,
  budgetView,
} from '../protocol/rest.js';
import { deleteBudget } from '../store/deleteBudget.js';
import { listBudgets } from '../store/listBudgets.js';
import { putBudget } from '../store/putBudget.js';
import { route, routeOptions, typed } from './contract.js';
import type { ApiDeps } from './deps.js';
import { hasRole } from './principal.js';
import { pathId } from './validate.js';

/** What a tenant admin may set: the tenant is the principal's, never the body's. */
const budgetBody = z
  .object({
    scope: scope.default('tenant'),
    scope_id: z.string().min(1).max(256).nullable().default(null).meta({
      description:
        'the user (a session owner), agent, session or execution (with its threads); null for the whole tenant',
    }),
    metric: metric.meta({
      description:
        'cost_usd (from the pricing table), tokens (input + output), tool_calls, or wall_ms (model and tool time)',
    }),
    period: period.meta({ description: 'day or month (UTC calendar periods), or run (each turn)' }),
    limit: z.number().nonnegative().max(maxBudgetLimit),
  })
  .strict()
  .refine((budget) => (budget.scope === 'tenant') === (budget.scope_id === null), {
    message: 'required for a user, agent, session or execution budget, null for a tenant one',
    path: ['scope_id'],
  });

export const budgetContracts = {
  list: route({
    method: 'GET',
    url: '/api/v1/budgets',
    summary: "The tenant's spending budgets with what each used and holds reserved (admin)",
    responses: { '200': z.object({ items: z.array(budgetView) }) },
    errors: { '403': 'forbidden' },
  }),
  put: route({
    method: 'PUT',
    url: '/api/v1/budgets/:budgetId',
    summary: 'Create or replace a spending budget of the tenant (admin)',
    body: budgetBody,
    responses: { '200': budgetView },
    errors: { '400': 'invalid_request', '403': 'forbidden' },
  }),
  delete: route({
    method: 'DELETE',
    url: '/api/v1/budgets/:budgetId',
    summary: 'Delete a spending budget of the tenant (admin)',
    responses: {
      '200': z.object({ budget_id: z.string(), deleted: z.literal(true) }),
    },
    errors: { '403': 'forbidden', '404': 'budget_not_found' },
  }),
};

/**
 * Spending budgets (docs/governance.md, "Budgets that are enforced"), admin only: list
 * them with their standing, PUT one (created or replaced), DELETE one. Scoped to the
 * principal's tenant: another tenant's budget is the same 404 as a missing one. Workers
 * read budgets on every model call, so an edit applies from the next call.
 *
 * An encapsulated plugin: the `admin` role is checked by its own hook, for these routes
 * only, before the body is read.
 */
export async function budgetsPlugin(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  app.addHook('onRequest', async (request) => {
    if (!hasRole(request.principal, 'admin')) {
      throw new ParleyError('forbidden', 'budgets need the admin role');
    }
  });
  const api = typed(app);
  const { list, put } = budgetContracts;
  const remove = budgetContracts.delete;
  api.get(list.url, routeOptions(list), async (request) => ({
    items: (await listBudgets(deps.db, request.principal.tenant)).map(view),
  }));
  api.put(put.url, routeOptions(put), async (request) => {
    const id = idOf(request.params.budgetId);
    const { tenant, user } = request.principal;
    const body = request.body;
    await putBudget(deps.db, {
      tenant,
      budgetId: id,
      scope: body.scope,
      scopeId: body.scope_id,
      metric: body.metric,
      period: body.period,
      limit: body.limit,
      updatedBy: user,
    });
    const budget = (await listBudgets(deps.db, tenant)).find((one) => one.budget_id === id);
    if (!budget) throw notFound(id);
    return view(budget);
  });
  api.delete(remove.url, routeOptions(remove), async (request) => {
    const id = idOf(request.params.budgetId);
    if (!(await deleteBudget(deps.db, request.principal.tenant, id))) throw notFound(id);
    return { budget_id: id, deleted: true as const };
  });
}

function idOf(raw: string): string {
  const id = pathId(raw, 'budget_id');
  if (!budgetId.safeParse(id).success) {
    throw new ParleyError('invalid_request', 'budget_id: letters, digits, _ and - (at most 64)', {
      field: 'budget_id',
    });
  }
  return id;
}

function notFound(id: string): ParleyError {
  return new ParleyError('budget_not_found', `no budget "${id}"`);
}

function view<B extends { updated_at: Date }>(
  budget: B,
): Omit<B, 'updated_at'> & { updated_at: string } {
  return { ...budget, updated_at: budget.updated_at.toISOString() };
}
