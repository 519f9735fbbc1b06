import type { Queryable } from './db.js';

/**
 * Where the run open at `sequence` began, and the session's latest sequence. A reader
 * resuming a protocol's stream mid-run folds again from there to know what is open: from
 * the first `turn_started` of the turn whose `turn_started` is the last at or before
 * `sequence` (1 when none: the session's start). Its first, not its last: a turn that
 * went on after its requests were answered continues as a run of its own, whose id (AG-UI's
 * `<turn id>.<sequence>`) only a fold that saw the turn stop for them can give.
 */
export async function lastRunStart(
  db: Queryable,
  sessionId: string,
  sequence: number,
): Promise<{ start: number; latest: number }> {
  const found = await db.query<{ start: number | null; latest: number }>(
    `select (select min(f.sequence) from events f
              where f.session_id = s.session_id and f.type = 'turn_started'
                and f.turn_id = (select e.turn_id from events e
                                  where e.session_id = s.session_id and e.sequence <= $2
                                    and e.type = 'turn_started'
                                  order by e.sequence desc limit 1))::int as start,
            s.last_sequence::int as latest
       from sessions s where s.session_id = $1`,
    [sessionId, sequence],
  );
  const row = found.rows[0];
  return { start: row?.start ?? 1, latest: row?.latest ?? 0 };
}
