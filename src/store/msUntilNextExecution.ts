import type { Queryable } from './db.js';

/**
 * Milliseconds until the earliest timer still in the future (null: none), for the runner's
 * sleep. Rows already due are either claimed or leased by another worker (their recovery is
 * the poll interval's business), so only future timers count: an index range scan.
 */
export async function msUntilNextExecution(db: Queryable): Promise<number | null> {
  const found = await db.query<{ ms: number | null }>({
    name: 'next_execution_due',
    text: `select ceil(extract(epoch from min(next_run_at) - now()) * 1000)::bigint as ms
             from executions where next_run_at > now()`,
  });
  return found.rows[0]?.ms ?? null;
}
