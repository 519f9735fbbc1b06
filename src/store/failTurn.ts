import { newEvent } from '../protocol/events.js';
import type { Db } from './db.js';
import { appendEvents } from './appendEvents.js';
import { billUsage } from './billUsage.js';
import { closeBurst } from './closeBurst.js';
import { settleReservations } from './settleReservations.js';
import type { BurstRef, Lease } from './types.js';
import { usageEvents, type Usage } from './usageRows.js';

/**
 * Ends a burst for good with an `error` event (a permanent provider error, or retries
 * exhausted). Deliberately not "progress" (unless `progress`): repeated failures lead to
 * parking.
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
    // The append takes the session row first (one lock order everywhere).
    const sequence = await appendEvents(
      tx,
      lease,
      [
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
