import type { Queryable } from './db.js';

/**
 * Milliseconds until the earliest deadline of a pending input request, by the database's
 * clock (0 when one is due; null: none has a deadline).
 */
export async function msUntilNextDeadline(db: Queryable): Promise<number | null> {
  const found = await db.query<{ ms: number | string | null }>(
    `select greatest(0, extract(epoch from (min(deadline_at) - now())) * 1000) as ms
       from input_requests
      where state = 'pending' and deadline_at is not null`,
  );
  const ms = found.rows[0]?.ms;
  return ms === null || ms === undefined ? null : Math.ceil(Number(ms));
}
