import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../src/store/db.js';
import { msUntilNextDeadline } from '../src/store/msUntilNextDeadline.js';
import { openTestDb } from './support/db.js';
import { admit } from './support/runtime-helpers.js';

// How long the approval timer (runtime/approvalTimer.ts) may sleep: until the earliest
// deadline or nudge of a pending request, and, when none waits, as long as it likes (its
// poll interval). A 0 there would make it run round after round without pause.

let db: Db;
let closeDb: () => Promise<void>;
let counter = 0;

beforeAll(async () => {
  ({ db, close: closeDb } = await openTestDb());
});
afterAll(async () => {
  await closeDb?.();
});

/** A pending request on a new session, its deadline and nudge `in` so many seconds (null: none). */
async function pendingRequest(deadlineIn: number | null, nudgeIn: number | null = null) {
  const turnId = `timer_${counter++}`;
  const { session_id: sessionId } = await admit(db, { turnId, message: 'ask' });
  await db.query(
    `insert into input_requests (request_id, tenant, session_id, turn_id, call_id, kind,
                                 expected_sequence, deadline_at, next_nudge_at)
     values ($1, 'default', $2, $3, 'call', 'approval', 1,
             now() + $4::integer * interval '1 second', now() + $5::integer * interval '1 second')`,
    [`req_${turnId}`, sessionId, turnId, deadlineIn, nudgeIn],
  );
}

describe('the approval timer’s sleep', () => {
  it('is unbounded when no pending request has a deadline or a nudge', async () => {
    expect(await msUntilNextDeadline(db)).toBeNull();
    await pendingRequest(null);
    expect(await msUntilNextDeadline(db)).toBeNull();
  });

  it('ends at the earliest deadline or nudge, and is 0 once one is due', async () => {
    await pendingRequest(3600);
    const hour = (await msUntilNextDeadline(db)) as number;
    expect(hour).toBeGreaterThan(3_500_000);
    expect(hour).toBeLessThanOrEqual(3_600_000);
    await pendingRequest(7200, 600);
    const nudge = (await msUntilNextDeadline(db)) as number;
    expect(nudge).toBeGreaterThan(500_000);
    expect(nudge).toBeLessThanOrEqual(600_000);
    await pendingRequest(-5);
    expect(await msUntilNextDeadline(db)).toBe(0);
  });
});
