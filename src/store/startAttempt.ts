import type { Db } from './db.js';
import { appendEvents } from './appendEvents.js';
import { BurstChangedError, type Lease } from './types.js';
import { notifyWakeup } from './wakeups.js';

/**
 * Opens an attempt at answering a burst: `attempt_reset` first if an earlier attempt left
 * partial output (its worker lost the lease), then `turn_started`. Not "progress" for
 * parking: a worker that crashes right after this must still count toward parking.
 */
export async function startAttempt(
  db: Db,
  lease: Lease,
  burst: { turnIds: string[]; attempt: number; resetPrevious: boolean },
): Promise<number> {
  const lead = burst.turnIds[0] as string;
  return db.transaction(async (tx) => {
    const events = [];
    if (burst.resetPrevious) {
      events.push({
        type: 'attempt_reset',
        turn_id: lead,
        payload: { attempt: burst.attempt - 1 },
      });
    }
    events.push({
      type: 'turn_started',
      turn_id: lead,
      payload: { attempt: burst.attempt, turn_ids: burst.turnIds },
    });
    const sequence = await appendEvents(tx, lease, events);
    await tx.query(
      `update sessions
          set attempt = $2, partial_output = false, current_turn_id = $3, state = 'running'
        where session_id = $1`,
      [lease.sessionId, burst.attempt, lead],
    );
    // Under the session row lock: a queued turn cancelled since it was collected is not
    // ours to answer any more; roll back and collect again.
    const started = await tx.query(
      `update turns set state = 'running'
        where tenant = $1 and turn_id = any($2::text[]) and state in ('queued', 'running')
        returning turn_id`,
      [lease.tenant, burst.turnIds],
    );
    if (started.rowCount !== burst.turnIds.length) throw new BurstChangedError(lease.sessionId);
    // Readers show "assistant is writing…" from now on (live-only, never journaled).
    await notifyWakeup(tx, { kind: 'typing', sessionId: lease.sessionId, sequence });
    return sequence;
  });
}
