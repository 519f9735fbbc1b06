import type { Queryable } from './db.js';
import { LeaseLostError, type Lease } from './types.js';
import { notifyWakeup } from './wakeups.js';

/**
 * The heartbeat: extends the lease, gated on the token; also re-raises typing for readers.
 * Reports whether a cancel of the running burst is pending (covers a lost wake-up).
 */
export async function renewLease(
  db: Queryable,
  lease: Lease,
  ttlMs: number,
): Promise<{ cancelRequested: boolean }> {
  const renewed = await db.query<{ last_sequence: number; cancel_requested: boolean }>(
    `update sessions
        set lease_expires_at = now() + $3::integer * interval '1 millisecond'
      where session_id = $1 and lease_token = $2
      returning last_sequence, cancel_command_id is not null as cancel_requested`,
    [lease.sessionId, lease.token, ttlMs],
  );
  const row = renewed.rows[0];
  if (!row) throw new LeaseLostError(lease.sessionId);
  await notifyWakeup(db, {
    kind: 'typing',
    sessionId: lease.sessionId,
    sequence: row.last_sequence,
  });
  return { cancelRequested: row.cancel_requested };
}
