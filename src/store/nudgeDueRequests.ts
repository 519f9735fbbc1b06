import { newEvent, type NewEvent } from '../protocol/events.js';
import { journalEvents } from './appendEvents.js';
import type { Db } from './db.js';
import { eachDueSession } from './eachDueSession.js';
import type { Nudge } from './types.js';

/**
 * The approval timer's other round (docs/governance.md, "Escalation and reminders"): takes
 * the escalations and reminders that fell due on pending requests. Each session in its own
 * transaction that locks the session row first (as an answer and a deadline do), then
 * re-reads its pending requests with a due nudge: a request answered or timed out
 * meanwhile is no longer pending and is left alone. A due escalation adds its target to the
 * request's audience (`escalated_to`, `escalation_step`) and journals `input_escalated`; a due reminder
 * journals `input_reminder`. The nudges taken are removed from the row in the transaction
 * that journals them, so however many workers run the timer, and however often one
 * crashed, each happens once. Several due at once (the timer was down) all happen, in
 * order. Returns how many nudges it took.
 */
export async function nudgeDueRequests(db: Db, options: { limit: number }): Promise<number> {
  return eachDueSession(db, 'next_nudge_at', options.limit, async (tx, { sessionId }) => {
    const requests = await tx.query<{
      request_id: string;
      turn_id: string;
      nudges: Nudge[];
      deadline_at: Date | null;
      clock: Date;
    }>(
      `select request_id, turn_id, nudges, deadline_at, now() as clock
           from input_requests
          where session_id = $1 and state = 'pending' and next_nudge_at <= now()
          order by expected_sequence`,
      [sessionId],
    );
    const events: NewEvent[] = [];
    for (const request of requests.rows) {
      const clock = request.clock.getTime();
      const taking = request.nudges.filter((nudge) => Date.parse(nudge.at) <= clock);
      const left = request.nudges.slice(taking.length);
      const added: string[] = [];
      let step: number | null = null;
      for (const nudge of taking) {
        if (nudge.kind === 'escalate') {
          added.push(nudge.to);
          step = nudge.step;
          events.push(
            newEvent('input_escalated', request.turn_id, {
              request_id: request.request_id,
              step: nudge.step,
              to: nudge.to,
            }),
          );
        } else if (request.deadline_at !== null) {
          events.push(
            newEvent('input_reminder', request.turn_id, {
              request_id: request.request_id,
              deadline_at: request.deadline_at.toISOString(),
            }),
          );
        }
      }
      await tx.query(
        `update input_requests
              set nudges = $2::jsonb, next_nudge_at = ($2::jsonb -> 0 ->> 'at')::timestamptz,
                  escalated_to = escalated_to || $3::text[],
                  escalation_step = coalesce($4, escalation_step)
            where request_id = $1`,
        [request.request_id, JSON.stringify(left), added, step],
      );
    }
    if (events.length > 0) await journalEvents(tx, sessionId, events);
    return events.length;
  });
}
