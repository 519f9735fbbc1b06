import { newEvent, timeoutActor } from '../protocol/events.js';
import { journalEvents } from './appendEvents.js';
import type { Db } from './db.js';
import { eachDueSession } from './eachDueSession.js';

/**
 * The approval timer's round (docs/governance.md, "Approvals that end"): resolves the
 * pending requests whose deadline has passed with their safe default (`on_timeout`:
 * reject unless the operator configured approve). Each session in its own transaction
 * that locks the session row first, as an answer does, then re-reads its requests
 * `where state = 'pending'`: a person's answer racing the deadline is decided by that
 * lock — whichever commits first wins, and the loser sees the outcome (the answer gets 409
 * stale_input; the timer finds nothing pending). However many workers run the timer, and
 * however often one crashed mid-round, each request is resolved once: its state changes
 * in the transaction that journals its one `input_resolved` (actor `system:timeout`).
 * When nothing else of the session waits for a person, the session is queued and woken
 * exactly as the last answer would. Returns how many requests it resolved.
 */
export async function expireDueRequests(db: Db, options: { limit: number }): Promise<number> {
  return eachDueSession(db, 'deadline_at', options.limit, async (tx, { sessionId, tenant }) => {
    const actor = { user: timeoutActor, tenant };
    const expired = await tx.query<{
      request_id: string;
      turn_id: string;
      expected_sequence: number;
      approved: boolean;
    }>(
      `update input_requests
            set state = 'timeout', approved = (on_timeout = 'approve'), actor = $2,
                answered_at = now()
          where session_id = $1 and state = 'pending' and deadline_at <= now()
          returning request_id, turn_id, expected_sequence, approved`,
      [sessionId, JSON.stringify(actor)],
    );
    if (expired.rows.length === 0) return 0;
    const others = await tx.query(
      `select 1 from input_requests where session_id = $1 and state = 'pending' limit 1`,
      [sessionId],
    );
    if (others.rowCount === 0) {
      await tx.query(
        `update sessions set state = 'queued' where session_id = $1 and state = 'input_required'`,
        [sessionId],
      );
    }
    const inOrder = expired.rows.sort((a, b) => a.expected_sequence - b.expected_sequence);
    await journalEvents(
      tx,
      sessionId,
      inOrder.map((row) =>
        newEvent('input_resolved', row.turn_id, {
          request_id: row.request_id,
          approved: row.approved,
          actor,
          state: 'timeout',
        }),
      ),
      others.rowCount === 0 ? 'input' : 'events',
    );
    return inOrder.length;
  });
}
