import { liveReservation } from './budgetStanding.js';
import type { Queryable } from './db.js';

/** Reserved amounts in flight, per tenant (the `parley_budget_reserved` gauge). */
export async function reservedTotals(
  db: Queryable,
): Promise<{ tenant: string; tokens: number; cost_usd: number }[]> {
  const totals = await db.query<{ tenant: string; tokens: number; cost_usd: number }>(
    `select r.tenant, sum(r.tokens)::float8 as tokens, sum(r.cost_usd)::float8 as cost_usd
       from budget_reservations r
      where ${liveReservation('r')}
      group by r.tenant`,
  );
  return totals.rows;
}
