import type { Queryable } from './db.js';
import type { Lease } from './types.js';
import { notifyWakeup } from './wakeups.js';

/**
 * Gives the session back. If input arrived after the drain loop last looked, the session
 * goes back to `queued` and a wake-up tells every worker (this one included) to claim it.
 * Returns false if the lease was no longer ours (nothing to release).
 */
export async function releaseLease(db: Queryable, lease: Lease): Promise<boolean> {
  const released = await db.query<{ pending: boolean; last_sequence: number }>(
    `update sessions
        set lease_token = null,
            lease_owner = null,
            lease_expires_at = null,
            state = case
                      when state <> 'running' then state
                      when input_count > input_cursor then 'queued'
                      else 'idle'
                    end
      where session_id = $1 and lease_token = $2
      returning input_count > input_cursor as pending, last_sequence`,
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
