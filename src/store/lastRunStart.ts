import type { Queryable } from './db.js';

/**
 * Where the run open at `sequence` began, the session's latest sequence, and the session's
 * state as a reader had it when that run began. A reader resuming a protocol's stream
 * mid-run folds again from there to know what is open: from the first `turn_started` of
 * the turn whose `turn_started` is the last at or before `sequence` (1 when none: the
 * session's start). Its first, not its last: a turn that went on after its requests were
 * answered continues as a run of its own, whose id (AG-UI's `<turn id>.<sequence>`) only a
 * fold that saw the turn stop for them can give. The state is the last `state_changed`
 * before that start (a run shows the state changed before it when it starts), so a change
 * after the cursor is shown to the reader as a patch of what it has; null for a session
 * without state, whose journal is then not searched.
 */
export async function lastRunStart(
  db: Queryable,
  sessionId: string,
  sequence: number,
): Promise<{ start: number; latest: number; state: Record<string, unknown> | null }> {
  const found = await db.query<{
    start: number;
    latest: number;
    state: Record<string, unknown> | null;
  }>(
    `with run as (
       select s.session_id, s.last_sequence, s.data is not null as stateful,
              coalesce((select min(f.sequence) from events f
                         where f.session_id = s.session_id and f.type = 'turn_started'
                           and f.turn_id = (select e.turn_id from events e
                                             where e.session_id = s.session_id
                                               and e.sequence <= $2
                                               and e.type = 'turn_started'
                                             order by e.sequence desc limit 1)), 1) as start
         from sessions s where s.session_id = $1)
     select r.start::int as start, r.last_sequence::int as latest,
            case when r.stateful then
              (select g.payload -> 'data' from events g
                where g.session_id = r.session_id and g.sequence < r.start
                  and g.type = 'state_changed'
                order by g.sequence desc limit 1)
            end as state
       from run r`,
    [sessionId, sequence],
  );
  const row = found.rows[0];
  return { start: row?.start ?? 1, latest: row?.latest ?? 0, state: row?.state ?? null };
}
