import { newEvent, type NewEvent } from '../protocol/events.js';
import type { Queryable } from './db.js';

/**
 * A superseded request is `expired` (as ever); a cancelled turn's is `cancelled`; a turn
 * that ended with an error (or was parked) leaves its requests `error`.
 */
const stateOf = { superseded: 'expired', cancelled: 'cancelled', error: 'error' } as const;

/**
 * Expires every pending input request of a session: a new message superseded them
 * (`pending_input: supersede`), their turn was cancelled, or it ended for good with an
 * error (nothing would resume it: its saved burst is gone). Runs under the caller's lock
 * on the session row, so an answer racing it is decided by that lock: whichever commits
 * first wins, and the loser sees the outcome (an answer after this gets 409 stale_input; an
 * answer before it leaves nothing pending here, and the approved call runs). Returns the
 * `input_resolved` events the caller journals in the same transaction.
 */
export async function expirePendingRequests(
  tx: Queryable,
  sessionId: string,
  reason: 'superseded' | 'cancelled' | 'error',
): Promise<NewEvent[]> {
  const expired = await tx.query<{
    request_id: string;
    turn_id: string;
    expected_sequence: number;
  }>(
    `update input_requests set state = $3, answered_at = now(), response = $2
      where session_id = $1 and state = 'pending'
      returning request_id, turn_id, expected_sequence`,
    [sessionId, JSON.stringify({ expired: reason }), stateOf[reason]],
  );
  const inOrder = expired.rows.sort((a, b) => a.expected_sequence - b.expected_sequence);
  return inOrder.map((row) =>
    newEvent('input_resolved', row.turn_id, {
      request_id: row.request_id,
      approved: false,
      expired: reason,
      actor: null,
      state: stateOf[reason],
    }),
  );
}
