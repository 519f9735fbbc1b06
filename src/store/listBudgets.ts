import { budgetColumns, standingSql, type BudgetStanding } from './budgetStanding.js';
import type { Queryable } from './db.js';

/**
 * A tenant's budgets with what each has used in its current period and holds reserved
 * for calls in flight (`used` is null for a `run` budget: each turn has its own).
 */
export async function listBudgets(db: Queryable, tenant: string): Promise<BudgetStanding[]> {
  const standing = standingSql('b', null);
  const listed = await db.query<BudgetStanding>(
    `select ${budgetColumns}, ${standing.used} as used, ${standing.reserved} as reserved
       from budgets b where b.tenant = $1 order by b.budget_id`,
    [tenant],
  );
  return listed.rows;
}
