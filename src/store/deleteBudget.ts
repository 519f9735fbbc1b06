import type { Queryable } from './db.js';

/** Deletes a tenant's budget; false when it has none of that id. */
export async function deleteBudget(
  db: Queryable,
  tenant: string,
  budgetId: string,
): Promise<boolean> {
  const deleted = await db.query('delete from budgets where tenant = $1 and budget_id = $2', [
    tenant,
    budgetId,
  ]);
  return deleted.rowCount > 0;
}
