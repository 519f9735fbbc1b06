import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { newEvent } from '../src/protocol/events.js';
import { appendEvents } from '../src/store/appendEvents.js';
import { claimSession } from '../src/store/claimSession.js';
import { startAttempt } from '../src/store/startAttempt.js';
import type { BurstState, SessionRow } from '../src/store/types.js';
import { checkJournalInvariants } from './support/invariants.js';
import {
  journal,
  sessionRow,
  sleep,
  startTestWorker,
  waitForLeaseExpiry,
  waitForRelease,
  waitForTerminal,
  type SeenEvent,
  type TestWorker,
} from './support/runtime-helpers.js';
import { request, startTestServer, type TestServer } from './support/server.js';

/**
 * RUNTIME.md, "Parking": a session claimed 5 times in a row without one applied turn write
 * is parked (skipped by claimers, an `error` event, visible in the projection) until an
 * operator unparks it. Claims count at claim time; text deltas and `done` reset the count;
 * `turn_started` and provider errors do not. The next claim after the fifth parks.
 */

let server: TestServer;
let worker: TestWorker | null = null;
let counter = 0;
const turnId = () => `park_${Date.now()}_${counter++}`;

beforeAll(async () => {
  // API only: the tests decide when a worker runs (a real one, on the same database).
  server = await startTestServer({}, {}, { api: true, worker: false });
});
afterEach(async () => {
  await worker?.stop();
  worker = null;
});
afterAll(async () => {
  if (server) {
    await checkJournalInvariants(server.db);
    await server.close();
  }
});

async function admit(body: Record<string, unknown>) {
  const answer = await request(server.url, 'POST', '/api/v1/chat/turns', body);
  expect(answer.status, JSON.stringify(answer.body)).toBe(202);
  return answer.body as { session_id: string; turn_id: string; sequence: number };
}
const projection = async (sessionId: string) =>
  (await request(server.url, 'GET', `/api/v1/chat/sessions/${sessionId}`)).body;
const unpark = (sessionId: string) =>
  request(server.url, 'POST', `/api/v1/admin/sessions/${sessionId}/unpark`);

/** Five workers claim the session, open an attempt at `turnId`, and die without another write. */
async function crashedAttempts(sessionId: string, turnId: string): Promise<void> {
  for (let claim = 1; claim <= 5; claim++) {
    const claimed = (await claimSession(server.db, {
      token: `crashed_${claim}`,
      owner: `crashed_${claim}`,
      ttlMs: 100,
      maxTurns: 50,
    })) as SessionRow;
    expect(claimed?.session_id).toBe(sessionId);
    expect(claimed.claim_count).toBe(claim);
    await startAttempt(
      server.db,
      { sessionId, tenant: claimed.tenant, token: claimed.lease_token as string },
      {
        turnIds: [turnId],
        attempt: claimed.attempt + 1,
        resetPrevious: claimed.partial_output,
        seenSequence: null,
        historyBefore: 0,
        historyLimit: 0,
        historyBytes: 0,
      },
    );
    await waitForLeaseExpiry(server.db, sessionId);
  }
}

describe('parking after claims without progress', () => {
  it('parks a session whose workers keep dying, skips it, and resumes it on unpark', async () => {
    const t1 = turnId();
    const { session_id: sessionId } = await admit({ turn_id: t1, message: 'doomed' });
    // Five workers claim the session, open an attempt, and die without another write.
    await crashedAttempts(sessionId, t1);

    // The next claim (a real worker's) parks it instead of burning another attempt.
    worker = await startTestWorker(server.db, server.config);
    const parked = await waitForTerminal(server.db, sessionId, t1);
    expect(parked).toMatchObject({ type: 'error', turn_id: t1, code: 'session_parked' });
    expect(parked.turn_ids).toEqual([t1]);
    expect(typeof parked.message).toBe('string');
    expect(worker.calls).toHaveLength(0);
    const types = (await journal(server.db, sessionId)).map((event) => event.type);
    expect(types).toEqual(['message', ...Array(5).fill('turn_started'), 'error']);
    expect(await projection(sessionId)).toMatchObject({ state: 'parked', current_turn: null });
    const row = await sessionRow(server.db, sessionId);
    expect(row.lease_token).toBeNull();
    const turn = await server.db.query<{ state: string }>(
      'select state from turns where turn_id = $1',
      [t1],
    );
    expect(turn.rows[0]?.state).toBe('error');

    // Parked: new input is admitted and kept, but no claimer takes the session.
    const t2 = turnId();
    await admit({ session_id: sessionId, turn_id: t2, message: 'anyone there' });
    await sleep(server.config.runtime.pollMs * 4);
    expect(
      await claimSession(server.db, { token: 'probe', owner: 'probe', ttlMs: 1000, maxTurns: 50 }),
    ).toBe(null);
    expect((await journal(server.db, sessionId)).map((event) => event.type)).toEqual([
      ...types,
      'message',
    ]);
    expect(await projection(sessionId)).toMatchObject({ state: 'parked', queued_turns: 1 });

    // The operator unparks it: the waiting message is answered.
    const resumed = await unpark(sessionId);
    expect(resumed.status).toBe(200);
    expect(resumed.body.session_id).toBe(sessionId);
    // Queued, or already claimed by the worker the unpark woke up.
    expect(['queued', 'running', 'idle']).toContain(resumed.body.state);
    const done = await waitForTerminal(server.db, sessionId, t2);
    expect(done).toMatchObject({
      type: 'done',
      turn_ids: [t2],
      final_message: { content: 'You said: anyone there' },
    });
    await waitForRelease(server.db, sessionId);
    expect(await projection(sessionId)).toMatchObject({ state: 'idle' });

    // Unparking a session that is not parked is a conflict; an unknown one is 404.
    const again = await unpark(sessionId);
    expect(again.status).toBe(409);
    expect(again.body.error).toBe('session_not_parked');
    const missing = await unpark('01NOSUCHSESSION');
    expect(missing.status).toBe(404);
    expect(missing.body.error).toBe('session_not_found');
  });

  it('journals a call that was running as interrupted: it may have acted', async () => {
    const t1 = turnId();
    const { session_id: sessionId } = await admit({ turn_id: t1, message: 'charge it' });
    const claimed = (await claimSession(server.db, {
      token: 'runner',
      owner: 'runner',
      ttlMs: 100,
      maxTurns: 50,
    })) as SessionRow;
    const lease = { sessionId, tenant: claimed.tenant, token: 'runner' };
    await startAttempt(server.db, lease, {
      turnIds: [t1],
      attempt: claimed.attempt + 1,
      resetPrevious: claimed.partial_output,
      seenSequence: null,
      historyBefore: 0,
      historyLimit: 0,
      historyBytes: 0,
    });
    // The worker proposed two calls, started the first, and died: the state it saved.
    const call = (id: string, status: 'running' | 'pending') => ({
      call_id: id,
      tool: 'clock',
      arguments: {},
      policy: 'allow' as const,
      status,
    });
    await appendEvents(server.db, lease, [
      newEvent('tool_call', t1, { call_id: 'park_call_1', tool: 'clock', arguments: {} }),
      newEvent('tool_call', t1, { call_id: 'park_call_2', tool: 'clock', arguments: {} }),
    ]);
    const burst: BurstState = {
      lead: t1,
      turn_ids: [t1],
      base_turn_ids: [t1],
      steps: [
        {
          kind: 'model',
          text: '',
          calls: [call('park_call_1', 'running'), call('park_call_2', 'pending')],
        },
      ],
      budget: { iterations: 1, tool_calls: 2 },
    };
    await server.db.query('update sessions set burst = $2, claim_count = 5 where session_id = $1', [
      sessionId,
      JSON.stringify(burst),
    ]);
    await waitForLeaseExpiry(server.db, sessionId);

    worker = await startTestWorker(server.db, server.config);
    expect(await waitForTerminal(server.db, sessionId, t1)).toMatchObject({
      code: 'session_parked',
    });
    const events = await journal(server.db, sessionId);
    expect(events.map((event) => event.type)).toEqual([
      'message',
      'turn_started',
      'tool_call',
      'tool_call',
      'tool_result',
      'error',
    ]);
    // The started call's outcome is unknown; the one never started did nothing.
    expect(events[4]).toMatchObject({
      call_id: 'park_call_1',
      ok: false,
      error: { code: 'interrupted' },
    });
    expect(worker.calls).toHaveLength(0);
  });

  it('holds the messages queued behind the attempted turn; the unpark answers them', async () => {
    const t1 = turnId();
    const { session_id: sessionId } = await admit({ turn_id: t1, message: 'poison' });
    await crashedAttempts(sessionId, t1);
    // Two messages arrive behind the attempted turn before the session is parked.
    const [t2, t3] = [turnId(), turnId()];
    await admit({ session_id: sessionId, turn_id: t2, message: 'second' });
    await admit({ session_id: sessionId, turn_id: t3, message: 'third' });

    worker = await startTestWorker(server.db, server.config);
    const parked = await waitForTerminal(server.db, sessionId, t1);
    expect(parked).toMatchObject({ type: 'error', code: 'session_parked', turn_ids: [t1] });
    expect(parked.message).toContain('2 queued messages will be answered');
    expect(await projection(sessionId)).toMatchObject({ state: 'parked', queued_turns: 2 });
    const states = await server.db.query<{ turn_id: string; state: string }>(
      'select turn_id, state from turns where session_id = $1 order by position',
      [sessionId],
    );
    expect(states.rows.map((row) => row.state)).toEqual(['error', 'queued', 'queued']);
    expect(worker.calls).toHaveLength(0);

    expect((await unpark(sessionId)).status).toBe(200);
    const answered = await waitForTerminal(server.db, sessionId, t3);
    expect(answered).toMatchObject({ type: 'done' });
    expect(answered.turn_ids).toContain(t3);
    const terminals = (await journal(server.db, sessionId)).filter((event) =>
      ['done', 'error'].includes(event.type),
    );
    expect(terminals.flatMap((event) => event.turn_ids)).toEqual([t1, t2, t3]);
  });

  it('unpark with nothing pending leaves the session idle; the next message is answered', async () => {
    const t1 = turnId();
    const { session_id: sessionId } = await admit({ turn_id: t1, message: 'stuck' });
    // Five claims that die without writing anything at all (not even turn_started).
    for (let claim = 1; claim <= 5; claim++) {
      const claimed = await claimSession(server.db, {
        token: `dead_${claim}`,
        owner: 'dead',
        ttlMs: 100,
        maxTurns: 50,
      });
      expect(claimed?.claim_count).toBe(claim);
      await waitForLeaseExpiry(server.db, sessionId);
    }
    worker = await startTestWorker(server.db, server.config);
    expect(await waitForTerminal(server.db, sessionId, t1)).toMatchObject({
      code: 'session_parked',
      turn_ids: [t1],
    });
    expect((await journal(server.db, sessionId)).map((event) => event.type)).toEqual([
      'message',
      'error',
    ]);
    await worker.stop();
    const resumed = await unpark(sessionId);
    expect(resumed.status).toBe(200);
    expect(resumed.body).toMatchObject({ state: 'idle', queued_turns: 0 });
    expect((await sessionRow(server.db, sessionId)).claim_count).toBe(0);

    worker = await startTestWorker(server.db, server.config);
    const t2 = turnId();
    await admit({ session_id: sessionId, turn_id: t2, message: 'back again' });
    expect(await waitForTerminal(server.db, sessionId, t2)).toMatchObject({
      type: 'done',
      final_message: { content: 'You said: back again' },
    });
  });
});

describe('permanent provider errors count toward parking', () => {
  it('parks after 5 failing turns in a row; an answered turn in between resets the count', async () => {
    worker = await startTestWorker(server.db, server.config);
    let sessionId: string | null = null;
    /** One turn, alone in its claim: admitted after the previous claim was released. */
    const turn = async (message: string): Promise<SeenEvent> => {
      const id = turnId();
      const body: Record<string, unknown> = { turn_id: id, message };
      if (sessionId) body.session_id = sessionId;
      sessionId = (await admit(body)).session_id;
      const terminal = await waitForTerminal(server.db, sessionId, id);
      expect(terminal.turn_ids).toEqual([id]);
      await waitForRelease(server.db, sessionId);
      return terminal;
    };
    const claimCount = async () => (await sessionRow(server.db, sessionId as string)).claim_count;

    for (let failure = 1; failure <= 4; failure++) {
      expect(await turn(`/fail permanent ${failure}`)).toMatchObject({ code: 'provider_auth' });
      expect(await claimCount()).toBe(failure);
    }
    // An answered turn is an applied write: the count starts over.
    expect(await turn('a good one')).toMatchObject({ type: 'done' });
    expect(await claimCount()).toBe(0);
    for (let failure = 1; failure <= 5; failure++) {
      expect(await turn(`/fail permanent again ${failure}`)).toMatchObject({
        type: 'error',
        code: 'provider_auth',
      });
      expect(await claimCount()).toBe(failure);
    }
    // Five failing claims in a row: the next claim parks the session, whatever the input.
    const callsBefore = worker.calls.length;
    expect(await turn('hello after the failures')).toMatchObject({
      type: 'error',
      code: 'session_parked',
    });
    expect(worker.calls.length).toBe(callsBefore);
    expect(await projection(sessionId as unknown as string)).toMatchObject({ state: 'parked' });
    // Permanent errors were never retried: one provider call per failing turn.
    expect(worker.calls.filter((call) => call.input.startsWith('/fail permanent'))).toHaveLength(9);

    const resumed = await unpark(sessionId as unknown as string);
    expect(resumed.status).toBe(200);
    expect(await turn('and now')).toMatchObject({
      type: 'done',
      final_message: { content: 'You said: and now' },
    });
  });
});
