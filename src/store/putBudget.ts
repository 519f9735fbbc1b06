import {
  budgetColumns,
  type Budget,
  type BudgetMetric,
  type BudgetPeriod,
  type BudgetScope,
} from './budgetStanding.js';
import type { Queryable } from './db.js';

export interface BudgetInput {
  tenant: string;
  budgetId: string;
  scope: BudgetScope;
  scopeId: string | null;
  metric: BudgetMetric;
  period: BudgetPeriod;
  limit: number;
  updatedBy: string | null;
}

/** Creates or replaces a tenant's budget (a tenant admin's edit). */
export async function putBudget(db: Queryable, input: BudgetInput): Promise<Budget> {
  const put = await db.query<Budget>(
    `insert into budgets as b (tenant, budget_id, scope, scope_id, metric, period, limit_value,
                               origin, updated_by)
     values ($1, $2, $3, $4, $5, $6, $7, 'api', $8)
     on conflict (tenant, budget_id) do update
        set scope = excluded.scope, scope_id = excluded.scope_id, metric = excluded.metric,
            period = excluded.period, limit_value = excluded.limit_value, origin = 'api',
            updated_by = excluded.updated_by, updated_at = now()
     returning ${budgetColumns}`,
    [
      input.tenant,
      input.budgetId,
      input.scope,
      input.scopeId,
      input.metric,
      input.period,
      input.limit,
      input.updatedBy,
    ],
  );
  return put.rows[0] as Budget;
}
