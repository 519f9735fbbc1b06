import type { Db, Queryable } from './db.js';

/**
 * The approval timer's rounds' common shape: the sessions with a pending input request
 * whose `due` column has passed (earliest first, at most `limit` requests' worth), each
 * handed to `handle` in its own transaction after its session row is locked — the lock an
 * answer takes, so a round and an answer serialise, and `handle` re-reads what is still
 * pending. Returns the sum of what `handle` returned.
 */
export async function eachDueSession(
  db: Db,
  due: 'deadline_at' | 'next_nudge_at',
  limit: number,
  handle: (tx: Queryable, session: { sessionId: string; tenant: string }) => Promise<number>,
): Promise<number> {
  const found = await db.query<{ session_id: string }>(
    `select session_id from input_requests
      where state = 'pending' and ${due} <= now()
      order by ${due}
      limit $1`,
    [limit],
  );
  let total = 0;
  for (const sessionId of new Set(found.rows.map((row) => row.session_id))) {
    total += await db.transaction(async (tx) => {
      const locked = await tx.query<{ tenant: string }>(
        'select tenant from sessions where session_id = $1 for update',
        [sessionId],
      );
      const tenant = locked.rows[0]?.tenant;
      return tenant === undefined ? 0 : handle(tx, { sessionId, tenant });
    });
  }
  return total;
}
