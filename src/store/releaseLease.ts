import type { Queryable } from './db.js';
import type { Lease } from './types.js';
import { notifyWakeup } from './wakeups.js';

/**
 * Gives the session back. Turns cancelled while queued are skipped by the cursor here
 * (nothing else is left to answer). If input arrived after the drain loop last looked, the session
 * goes back to `queued` and a wake-up tells every worker (this one included) to claim it.
 * Returns false if the lease was no longer ours (nothing to release).
 */
export async function releaseLease(db: Queryable, lease: Lease): Promise<boolean> {
  const released = await db.query<{ pending: boolean; last_sequence: number }>(
    `with remaining as (
       select s.input_count as seen_count,
              exists (select 1 from turns t
                       where t.session_id = s.session_id
                         and t.position > s.input_cursor
                         and t.state in ('queued', 'running')) as pending
         from sessions s where s.session_id = $1
     )
     -- "remaining" is read from this statement's snapshot, but the row updated below is
     -- re-read if a concurrent admission committed meanwhile (PostgreSQL): never move the
     -- cursor past inputs the snapshot did not see, and treat them as pending.
     update sessions
        set input_cursor = case when remaining.pending then input_cursor
                                else greatest(input_cursor, remaining.seen_count) end,
            lease_token = null,
            lease_owner = null,
            lease_expires_at = null,
            state = case
                      when state <> 'running' then state
                      when remaining.pending or input_count > remaining.seen_count then 'queued'
                      else 'idle'
                    end
       from remaining
      where session_id = $1 and lease_token = $2
      returning remaining.pending or input_count > remaining.seen_count as pending, last_sequence`,
    [lease.sessionId, lease.token],
  );
  const row = released.rows[0];
  if (!row) return false;
  if (row.pending) {
    await notifyWakeup(db, {
      kind: 'input',
      sessionId: lease.sessionId,
      sequence: row.last_sequence,
    });
  }
  return true;
}

/**
 * Expires every lease at once. Only for embedded storage at start, where the data
 * directory's lock proves that the process which held them is gone.
 */
export async function releaseDeadLeases(db: Queryable): Promise<number> {
  const released = await db.query(
    `update sessions set lease_expires_at = now() - interval '1 millisecond'
      where lease_token is not null and lease_expires_at > now()`,
  );
  return released.rowCount;
}
