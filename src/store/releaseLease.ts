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
       select exists (select 1 from turns t join sessions s on s.session_id = t.session_id
                       where s.session_id = $1
                         and t.position > s.input_cursor
                         and t.state in ('queued', 'running')) as pending
     )
     update sessions
        set input_cursor = case when remaining.pending then input_cursor else input_count end,
            lease_token = null,
            lease_owner = null,
            lease_expires_at = null,
            state = case
                      when state <> 'running' then state
                      when remaining.pending then 'queued'
                      else 'idle'
                    end
       from remaining
      where session_id = $1 and lease_token = $2
      returning remaining.pending as pending, last_sequence`,
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
