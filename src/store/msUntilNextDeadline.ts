import type { Queryable } from './db.js';

/**
 * Milliseconds until the approval timer has something to do, by the database's clock: the
 * earliest deadline or due escalation/reminder of a pending input request (0 when one is
 * due; null: none has either). The clamp to 0 is done here, not by SQL's `greatest`, which
 * ignores a null and would answer 0 when nothing waits (a loop polling without pause).
 */
export async function msUntilNextDeadline(db: Queryable): Promise<number | null> {
  const found = await db.query<{ ms: number | string | null }>({
    name: 'next_deadline_due',
    text: `select extract(epoch from (least(
              (select min(deadline_at) from input_requests
                where state = 'pending' and deadline_at is not null),
              (select min(next_nudge_at) from input_requests
                where state = 'pending' and next_nudge_at is not null)) - now())) * 1000 as ms`,
  });
  const ms = found.rows[0]?.ms;
  return ms === null || ms === undefined ? null : Math.max(0, Math.ceil(Number(ms)));
}
