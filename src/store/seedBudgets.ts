import type { Db } from './db.js';
import type { BudgetInput } from './putBudget.js';

/**
 * Seeds the operator's budgets from the configuration at start: a budget the tenant does
 * not have yet is created; one it has (seeded before, or edited by its admin) is left as
 * it is, so a tenant admin's edit outlives restarts. Every process seeds the same way.
 */
export async function seedBudgets(
  db: Db,
  budgets: Omit<BudgetInput, 'updatedBy'>[],
): Promise<void> {
  if (budgets.length === 0) return;
  await db.transaction(async (tx) => {
    for (const budget of budgets) {
      await tx.query(
        `insert into budgets (tenant, budget_id, scope, scope_id, metric, period, limit_value,
                              origin)
         values ($1, $2, $3, $4, $5, $6, $7, 'config')
         on conflict (tenant, budget_id) do nothing`,
        [
          budget.tenant,
          budget.budgetId,
          budget.scope,
          budget.scopeId,
          budget.metric,
          budget.period,
          budget.limit,
        ],
      );
    }
  });
}
