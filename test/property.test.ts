import { newEvent } from '../src/protocol/events.js';
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendEvents } from '../src/store/appendEvents.js';
import type { Admission } from '../src/store/admitTurn.js';
import { claimSession } from '../src/store/claimSession.js';
import type { Db } from '../src/store/db.js';
import { unparkSession } from '../src/store/parkSession.js';
import { startAttempt } from '../src/store/startAttempt.js';
import { LeaseLostError, type Lease } from '../src/store/types.js';
import { openTestDb } from './support/db.js';
import { checkJournalInvariants } from './support/invariants.js';
import {
  admit,
  journal,
  runtimeConfig,
  sleep,
  startTestWorker,
  waitForLeaseExpiry,
  waitUntil,
  type TestWorker,
} from './support/runtime-helpers.js';

/**
 * Property: whatever the interleaving of admissions (new turns, retries, conflicting
 * reuses of a turn_id) to a few sessions, worker runs that start and stop, and workers
 * that crash mid-turn (claim, maybe open an attempt, maybe stream some text, then vanish
 * until their lease expires), once a real worker has drained everything:
 * - the journal invariants hold (gapless, each turn in exactly one done/error, no
 *   duplicate transcript rows);
 * - a client replaying the journal never sees an abandoned attempt's text leak into the
 *   next attempt, and the text it assembles for each `done` is that done's final message;
 * - each reply answers exactly the inputs its `done` names, labelled in order;
 * - a retry always gets the first answer; a conflicting reuse is refused.
 */

type Action =
  | { kind: 'admit'; session: number; words: string[] }
  | { kind: 'retry'; pick: number; fromClientWithoutSession: boolean }
  | { kind: 'conflict'; pick: number }
  | { kind: 'crash'; stage: 0 | 1 | 2 }
  | { kind: 'crashLoop' }
  | { kind: 'toggleWorker' }
  | { kind: 'pause'; ms: number };

const vocabulary = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf'];
const messageArb = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.array(fc.constantFrom(...vocabulary), { minLength: 1, maxLength: 4 }),
  },
  { weight: 1, arbitrary: fc.constant<string[]>(['/fail', 'permanent']) },
  { weight: 1, arbitrary: fc.constant<string[]>(['/fail', 'transient', '1']) },
);
const actionArb: fc.Arbitrary<Action> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('admit' as const),
      session: fc.integer({ min: 0, max: 2 }),
      words: messageArb,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('retry' as const),
      pick: fc.nat(),
      fromClientWithoutSession: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('conflict' as const), pick: fc.nat() }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('crash' as const),
      stage: fc.constantFrom(0 as const, 1 as const, 2 as const),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'crashLoop' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'toggleWorker' as const }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('pause' as const),
      ms: fc.integer({ min: 0, max: 250 }),
    }),
  },
);

// Short leases so that crashed workers' sessions come back quickly; heartbeat below ttl.
const config = runtimeConfig({
  runtime: { lease_ttl_ms: 300, heartbeat_ms: 100, poll_ms: 50, shutdown_grace_ms: 1000 },
});
const crashTtlMs = 100;

let db: Db;
let closeDb: () => Promise<void>;
let execution = 0;

beforeAll(async () => {
  ({ db, close: closeDb } = await openTestDb());
});
afterAll(async () => {
  if (db) await closeDb();
});

interface Admitted {
  turnId: string;
  message: string;
  answer: Admission;
}

/**
 * A worker that claims whatever is claimable, gets `stage` far into a turn, and dies.
 * Returns the session it claimed.
 */
async function crash(stage: 0 | 1 | 2): Promise<string | null> {
  const claimed = await claimSession(db, {
    token: `crash_${randomBytes(6).toString('hex')}`,
    owner: 'crashed-worker',
    ttlMs: crashTtlMs,
    maxTurns: 50,
  });
  if (!claimed) return null;
  if (stage === 0) return claimed.session_id;
  const lease: Lease = {
    sessionId: claimed.session_id,
    tenant: claimed.tenant,
    token: claimed.lease_token as string,
  };
  try {
    const turnIds = claimed.queued.map((turn) => turn.turn_id);
    if (turnIds.length === 0) return lease.sessionId;
    // Exactly what a real worker journals first, then (stage 2) some streamed text.
    await startAttempt(db, lease, {
      turnIds,
      attempt: claimed.attempt + 1,
      resetPrevious: claimed.partial_output,
      seenSequence: claimed.last_sequence,
      historyBefore: 0,
      historyLimit: 0,
      historyBytes: 0,
    });
    if (stage === 2) {
      await db.transaction((tx) =>
        appendEvents(
          tx,
          lease,
          [newEvent('text_delta', turnIds[0] as string, { delta: 'You said: half a' })],
          { progress: true, partialOutput: true },
        ),
      );
    }
  } catch (error) {
    // Its short lease ran out under load and a real worker took over: it is just as dead.
    if (!(error instanceof LeaseLostError)) throw error;
  }
  return lease.sessionId;
}

/** The demo model's reply to a burst (CONFIG.md): every word of each input, labelled. */
function expectedReply(messages: string[]): string {
  const words = (text: string) =>
    text
      .split(/\s+/)
      .filter((word) => word.length > 0)
      .join(' ');
  if (messages.length === 1) return `You said: ${words(messages[0] as string)}`;
  return messages.map((message, index) => `[${index + 1}] You said: ${words(message)}`).join('\n');
}

async function unfinished(sessionIds: string[]): Promise<number> {
  const found = await db.query<{ open: number }>(
    `select count(*)::int as open from turns
      where session_id = any($1::text[]) and state in ('queued', 'running')`,
    [sessionIds],
  );
  return found.rows[0]?.open ?? 0;
}

async function runScenario(actions: Action[]): Promise<void> {
  const run = execution++;
  const sessions: (string | null)[] = [null, null, null];
  const admitted: Admitted[] = [];
  let worker: TestWorker | null = null;
  let next = 0;
  try {
    for (const action of actions) {
      switch (action.kind) {
        case 'admit': {
          const turnId = `prop${run}_${next++}`;
          const message = action.words.join(' ');
          const answer = await admit(db, { sessionId: sessions[action.session], turnId, message });
          sessions[action.session] ??= answer.session_id;
          expect(answer.session_id).toBe(sessions[action.session]);
          admitted.push({ turnId, message, answer });
          break;
        }
        case 'retry': {
          const original = admitted[action.pick % Math.max(1, admitted.length)];
          if (!original) break;
          const again = await admit(db, {
            sessionId: action.fromClientWithoutSession ? null : original.answer.session_id,
            turnId: original.turnId,
            message: original.message,
          });
          expect(again).toEqual(original.answer);
          break;
        }
        case 'conflict': {
          const original = admitted[action.pick % Math.max(1, admitted.length)];
          if (!original) break;
          await expect(
            admit(db, { turnId: original.turnId, message: `${original.message} but different` }),
          ).rejects.toMatchObject({ code: 'turn_conflict' });
          break;
        }
        case 'crash':
          await crash(action.stage);
          break;
        case 'crashLoop':
          // A turn that kills every worker that tries it: enough in a row to park it.
          for (let attempt = 0; attempt < 6; attempt++) {
            const sessionId = await crash(1);
            if (sessionId === null) break;
            await waitForLeaseExpiry(db, sessionId);
          }
          break;
        case 'toggleWorker':
          if (worker) {
            await worker.stop();
            worker = null;
          } else {
            worker = await startTestWorker(db, config, `worker_${run}`);
          }
          break;
        case 'pause':
          await sleep(action.ms);
          break;
      }
    }

    // Drain: a real worker finishes everything; an operator unparks what got parked.
    worker ??= await startTestWorker(db, config, `worker_${run}`);
    const ours = sessions.filter((id): id is string => id !== null);
    await waitUntil(
      async () => {
        for (const sessionId of ours) await unparkSession(db, null, sessionId);
        return (await unfinished(ours)) === 0;
      },
      `run ${run} drains`,
      45_000,
    );
  } finally {
    await worker?.stop();
  }

  await checkJournalInvariants(db);

  const messageOf = new Map(admitted.map((turn) => [turn.turnId, turn.message]));
  const ours = sessions.filter((id): id is string => id !== null);
  const named = new Map<string, number>();
  for (const sessionId of ours) {
    let text = '';
    for (const event of await journal(db, sessionId)) {
      switch (event.type) {
        case 'turn_started':
          expect(text, `${sessionId}@${event.sequence}: stale text before a new attempt`).toBe('');
          break;
        case 'attempt_reset':
          text = '';
          break;
        case 'text_delta':
          text += event.delta;
          break;
        case 'done': {
          const content = (event.final_message as { content: string }).content;
          expect(text, `${sessionId}@${event.sequence}: streamed text = final message`).toBe(
            content,
          );
          const turnIds = event.turn_ids;
          expect(content).toBe(expectedReply(turnIds.map((id) => messageOf.get(id) ?? '?')));
          text = '';
          break;
        }
        case 'error':
          text = '';
          break;
      }
      if (['done', 'error'].includes(event.type)) {
        for (const id of event.turn_ids as string[]) named.set(id, (named.get(id) ?? 0) + 1);
      }
    }
  }
  for (const turn of admitted) expect(named.get(turn.turnId), turn.turnId).toBe(1);

  // Retries after everything finished still get the first answer.
  for (const turn of admitted.slice(0, 3)) {
    expect(await admit(db, { turnId: turn.turnId, message: turn.message })).toEqual(turn.answer);
  }
}

describe('journal invariants under random interleavings', () => {
  it('hold for admissions, retries, worker runs and crashed workers', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(actionArb, { minLength: 3, maxLength: 18 }), runScenario),
      { numRuns: 25, endOnFailure: true },
    );
  }, 240_000);
});
