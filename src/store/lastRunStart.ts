import type { Queryable } from './db.js';

/**
 * Where the run open at `sequence` began: the last `turn_started` at or before it (1 when
 * none: the session's start), and the session's latest sequence. A reader resuming a
 * protocol's stream mid-run folds again from there to know what is open.
 */
export async function lastRunStart(
  db: Queryable,
  sessionId: string,
  sequence: number,
): Promise<{ start: number; latest: number }> {
  const found = await db.query<{ start: number | null; latest: number }>(
    `select (select max(e.sequence) from events e
              where e.session_id = s.session_id and e.sequence <= $2
                and e.type = 'turn_started')::int as start,
            s.last_sequence::int as latest
       from sessions s where s.session_id = $1`,
    [sessionId, sequence],
  );
  const row = found.rows[0];
  return { start: row?.start ?? 1, latest: row?.latest ?? 0 };
}
