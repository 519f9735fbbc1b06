import { newEvent } from '../protocol/events.js';
import type { Db } from './db.js';
import { appendEvents } from './appendEvents.js';
import { billUsage } from './billUsage.js';
import { closeBurst } from './closeBurst.js';
import { settleReservations } from './settleReservations.js';
import { expirePendingRequests } from './expireRequests.js';
import { LeaseLostError, type BurstRef, type Lease } from './types.js';
import { usageEvents, type Usage } from './usageRows.js';

/**
 * Ends a burst for good with an `error` event (a permanent provider error, or retries
 * exhausted). Deliberately not "progress" (unless `progress`): repeated failures lead to
 * parking. A request of the burst still pending is closed as `error` in the same
 * transaction, journaled before the error, so no inbox keeps listing it.
 */
export async function failTurn(
  db: Db,
  lease: Lease,
  burst: BurstRef & {
    code: string;
    message: string;
    usage: Usage[];
    /** A decided end (a spending budget), not a failure: it does not lead to parking. */
    progress?: boolean;
  },
): Promise<number> {
  const lead = burst.turnIds[0] as string;
  return db.transaction(async (tx) => {
    // The session row first (one lock order everywhere: an answer takes it before the
    // request's row), gated on the lease.
    const locked = await tx.query(
      'select 1 from sessions where session_id = $1 and lease_token = $2 for update',
      [lease.sessionId, lease.token],
    );
    if (locked.rowCount === 0) throw new LeaseLostError(lease.sessionId);
    const closed = await expirePendingRequests(tx, lease.sessionId, 'error');
    const sequence = await appendEvents(
      tx,
      lease,
      [
        ...closed,
        ...usageEvents(lead, burst.usage),
        newEvent('error', lead, {
          code: burst.code,
          message: burst.message,
          turn_ids: burst.turnIds,
        }),
      ],
      { progress: burst.progress === true },
    );
    await closeBurst(tx, lease, burst, 'error');
    await billUsage(tx, lease, lead, burst.usage);
    await settleReservations(tx, lease.sessionId);
    return sequence;
  });
}
