import type { Db } from '../../src/store/db.js';
import { sleep, type Apis } from './http.js';
import type { Random } from './random.js';

export interface DrainResult {
  /** Turns still queued or running when the deadline passed (each one is a failure). */
  open: number;
  /** Requests still waiting for a person that the drain approved (through the API). */
  answered: number;
  /** Parked sessions with queued turns that the drain unparked, as an operator would. */
  unparked: number;
  durationMs: number;
}

/**
 * After the chaos: waits until every admitted turn has ended. A turn waiting for a person
 * whose client had already moved on is approved here, through the API; a parked session
 * holding queued turns is unparked, as an operator would (`parley sessions unpark`).
 * Nothing else helps the system along: what is still open at the deadline is reported.
 */
export async function drain(
  db: Db,
  apis: Apis,
  random: Random,
  timeoutMs: number,
): Promise<DrainResult> {
  const started = Date.now();
  const deadline = started + timeoutMs;
  const result: DrainResult = { open: 0, answered: 0, unparked: 0, durationMs: 0 };
  const tried = new Set<string>();
  for (;;) {
    result.open = await openTurns(db);
    if (result.open === 0 || Date.now() > deadline) break;
    const waiting = await db
      .query<{ session_id: string; request_id: string; expected_sequence: number }>(
        `select session_id, request_id, expected_sequence from input_requests where state = 'pending'`,
      )
      .catch(() => ({ rows: [] }));
    for (const request of waiting.rows) {
      if (tried.has(request.request_id)) continue;
      tried.add(request.request_id);
      const answer = await apis.send(
        'POST',
        `/api/v1/chat/sessions/${request.session_id}/inputs/${request.request_id}`,
        {
          expected_sequence: request.expected_sequence,
          approved: true,
          response: { reason: 'drain' },
        },
        { deadline: Date.now() + 10_000, random },
      );
      if (answer?.status === 200) result.answered += 1;
    }
    const parked = await db
      .query<{ session_id: string }>(
        `select session_id from sessions where state = 'parked' and input_count > input_cursor`,
      )
      .catch(() => ({ rows: [] }));
    for (const session of parked.rows) {
      const answer = await apis.send(
        'POST',
        `/api/v1/admin/sessions/${session.session_id}/unpark`,
        {},
        {
          deadline: Date.now() + 10_000,
          random,
        },
      );
      if (answer?.status === 200) result.unparked += 1;
    }
    await sleep(500);
  }
  result.durationMs = Date.now() - started;
  return result;
}

async function openTurns(db: Db): Promise<number> {
  const found = await db
    .query<{ open: number }>(
      `select count(*)::int as open from turns where state in ('queued', 'running')`,
    )
    .catch(() => ({ rows: [{ open: -1 }] }));
  return found.rows[0]?.open ?? -1;
}
