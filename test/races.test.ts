import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimSession } from '../src/store/claimSession.js';
import type { Db } from '../src/store/db.js';
import { parkSession } from '../src/store/parkSession.js';
import { readEvents } from '../src/store/readEvents.js';
import { engine } from './support/db.js';
import { checkJournalInvariants } from './support/invariants.js';
import { until } from './support/poll.js';
import { admit, waitUntil } from './support/runtime-helpers.js';
import { request, startTestServer, type TestServer } from './support/server.js';

/**
 * Issue 6, "Races and correctness". Each race is run for real: on PostgreSQL the two sides
 * run on separate connections at the same moment; on PGlite (one connection) the same test
 * checks the same outcome with the sides serialised.
 */

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({
    runtime: { max_parallel_turns: 8 },
    agents: { default: { tools: { calculator: 'approve' }, pending_input: 'supersede' } },
  });
});
afterAll(async () => {
  await checkJournalInvariants(server.db);
  await server.close();
});

const journal = (sessionId: string, db: Db = server.db): Promise<any[]> =>
  readEvents(db, sessionId, 0, 100_000);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('an approval racing a superseding message', () => {
  // 200 races on PostgreSQL, where they are truly concurrent; fewer on PGlite.
  const races = engine === 'postgres' ? 200 : 48;
  const lanes = 8;

  it(`is decided in one place: an answer acknowledged with 200 runs its call (${races} races)`, async () => {
    const outcomes = { approved: 0, superseded: 0 };
    const lane = async (laneIndex: number) => {
      for (let round = 0; round < races / lanes; round++) {
        const tag = `race_${laneIndex}_${round}`;
        const first = await request(server.url, 'POST', '/api/v1/chat/turns', {
          turn_id: `${tag}_tool`,
          message: `/tool calculator {"expression": "${laneIndex}+${round}"}`,
        });
        expect(first.status).toBe(202);
        const sessionId = first.body.session_id as string;
        const pending = await until(
          async () => (await request(server.url, 'GET', `/api/v1/chat/sessions/${sessionId}`)).body,
          (projection) => projection.state === 'input_required' && projection.pending_input,
          'the approval request',
        );
        const { request_id: requestId, expected_sequence: expected } = pending.pending_input;
        // The message, then the approval a few milliseconds later (0-15), both in flight.
        const message = request(server.url, 'POST', '/api/v1/chat/turns', {
          session_id: sessionId,
          turn_id: `${tag}_msg`,
          message: 'never mind that',
        });
        await sleep(round % 16);
        const approval = request(
          server.url,
          'POST',
          `/api/v1/chat/sessions/${sessionId}/inputs/${requestId}`,
          { expected_sequence: expected, approved: true },
        );
        const [admitted, answered] = await Promise.all([message, approval]);
        expect(admitted.status).toBe(202);
        expect([200, 409], JSON.stringify(answered.body)).toContain(answered.status);
        const events = await until(
          () => journal(sessionId),
          (list) =>
            list.some((event) => event.type === 'done' && event.turn_ids.includes(`${tag}_msg`)),
          'the message answered',
        );
        const results = events.filter((event) => event.type === 'tool_result');
        const resolved = events.filter(
          (event) => event.type === 'input_resolved' && event.request_id === requestId,
        );
        expect(resolved, tag).toHaveLength(1);
        if (answered.status === 200) {
          // Acknowledged: the call ran, exactly once, and the message was answered after it.
          outcomes.approved += 1;
          expect(resolved[0], tag).toMatchObject({ approved: true, actor: { user: 'local' } });
          expect(results, tag).toHaveLength(1);
          expect(results[0], tag).toMatchObject({ ok: true });
        } else {
          // Refused: the message superseded it first; nothing ran.
          outcomes.superseded += 1;
          expect(answered.body.error).toBe('stale_input');
          expect(resolved[0], tag).toMatchObject({ approved: false, expired: 'superseded' });
          expect(
            results.every((event) => !event.ok),
            tag,
          ).toBe(true);
        }
      }
    };
    await Promise.all(Array.from({ length: lanes }, (_unused, index) => lane(index)));
    expect(outcomes.approved + outcomes.superseded).toBe(races);
  });
});

describe('parking', () => {
  // No worker here: the test plays the claimer itself.
  let apiOnly: TestServer;
  beforeAll(async () => {
    apiOnly = await startTestServer({}, {}, { api: true, worker: false });
  });
  afterAll(async () => {
    await checkJournalInvariants(apiOnly.db);
    await apiOnly.close();
  });

  it('never loses a turn admitted while the session is being parked', async () => {
    const server = apiOnly;
    // Claimed five times without progress: the next claim parks it.
    const t1 = `park_race_${Date.now()}`;
    const parked = await admit(server.db, { turnId: t1, message: 'doomed' });
    {
      for (let claim = 0; claim < 5; claim++) {
        await server.db.query(
          `update sessions set claim_count = claim_count + 1 where session_id = $1`,
          [parked.session_id],
        );
      }
      const claimed = await claimSession(server.db, {
        token: 'parker',
        owner: 'parker',
        ttlMs: 60_000,
        maxTurns: 50,
      });
      expect(claimed?.session_id).toBe(parked.session_id);
      // An admission that has done its work but not committed: it holds the session row.
      let commit = () => {};
      const gate = new Promise<void>((resolve) => (commit = resolve));
      let holding = false;
      const hold = <T>(work: (tx: Db) => Promise<T>) =>
        server.db.transaction(async (tx) => {
          const result = await work(tx as Db);
          holding = true;
          await gate;
          return result;
        });
      const slowDb: Db = {
        ...server.db,
        query: (statement, params) => hold((tx) => tx.query(statement, params)),
        transaction: (work) => hold(work),
      };
      const t2 = `${t1}_late`;
      const admission = admit(slowDb, {
        sessionId: parked.session_id,
        turnId: t2,
        message: 'late',
      });
      await waitUntil(() => holding, 'the admission holds the session row');
      const parking = parkSession(
        server.db,
        {
          sessionId: parked.session_id,
          tenant: 'default',
          token: 'parker',
        },
        { claims: 5, queued: 'fail' },
      );
      await sleep(200);
      commit();
      await admission;
      const result = await parking;
      // The late turn got its 202: it is either failed with the session (PostgreSQL: the
      // park waited for it) or still queued for after the unpark (PGlite: it came after).
      const turn = (
        await server.db.query<{ state: string }>('select state from turns where turn_id = $1', [t2])
      ).rows[0];
      if (result?.turnIds.includes(t2)) expect(turn?.state).toBe('error');
      else expect(turn?.state).toBe('queued');
      const row = (
        await server.db.query<{ input_cursor: number; input_count: number }>(
          'select input_cursor, input_count from sessions where session_id = $1',
          [parked.session_id],
        )
      ).rows[0];
      if (turn?.state === 'queued') expect(row?.input_cursor).toBeLessThan(row?.input_count ?? 0);
    }
  });

  it('does not fail a turn that was cancelled while queued', async () => {
    const server = apiOnly;
    {
      const t1 = `park_cancel_${Date.now()}`;
      const first = await admit(server.db, { turnId: t1, message: 'doomed' });
      const t2 = `${t1}_b`;
      await admit(server.db, { sessionId: first.session_id, turnId: t2, message: 'cancel me' });
      const cancelled = await request(
        server.url,
        'POST',
        `/api/v1/chat/sessions/${first.session_id}/turns/${t2}/cancel`,
        { command_id: `${t2}_cancel` },
      );
      expect(cancelled.body.state).toBe('cancelled');
      await server.db.query('update sessions set claim_count = 5 where session_id = $1', [
        first.session_id,
      ]);
      const claimed = await claimSession(server.db, {
        token: 'parker2',
        owner: 'parker2',
        ttlMs: 60_000,
        maxTurns: 50,
      });
      const result = await parkSession(
        server.db,
        { sessionId: claimed?.session_id as string, tenant: 'default', token: 'parker2' },
        { claims: 5, queued: 'fail' },
      );
      expect(result?.turnIds).toEqual([t1]);
      const terminal = (await journal(first.session_id, server.db)).filter((event) =>
        ['done', 'error', 'cancelled'].includes(event.type),
      );
      expect(terminal.map((event) => [event.type, event.turn_ids])).toEqual([
        ['cancelled', [t2]],
        ['error', [t1]],
      ]);
    }
  });

  it('does not park a session whose running turn has a cancel acknowledged: the cancel wins', async () => {
    const server = apiOnly;
    const t1 = `park_cancelling_${Date.now()}`;
    const first = await admit(server.db, { turnId: t1, message: 'stuck' });
    // An attempt had started (and its workers kept dying) when the person cancelled.
    await server.db.query(`update turns set state = 'running' where turn_id = $1`, [t1]);
    const cancelled = await request(
      server.url,
      'POST',
      `/api/v1/chat/sessions/${first.session_id}/turns/${t1}/cancel`,
      { command_id: `${t1}_cancel` },
    );
    expect(cancelled.body).toMatchObject({ result: 'cancelled', state: 'cancelling' });
    await server.db.query('update sessions set claim_count = 5 where session_id = $1', [
      first.session_id,
    ]);
    const claimed = await claimSession(server.db, {
      token: 'parker3',
      owner: 'parker3',
      ttlMs: 60_000,
      maxTurns: 50,
    });
    expect(claimed?.session_id).toBe(first.session_id);
    const result = await parkSession(
      server.db,
      { sessionId: first.session_id, tenant: 'default', token: 'parker3' },
      { claims: 5, queued: 'fail' },
    );
    expect(result).toBeNull();
    const row = (
      await server.db.query<{ state: string; cancel_command_id: string | null }>(
        'select state, cancel_command_id from sessions where session_id = $1',
        [first.session_id],
      )
    ).rows[0];
    expect(row?.state).not.toBe('parked');
    expect(row?.cancel_command_id).toBe(`${t1}_cancel`);
    const errors = (await journal(first.session_id, server.db)).filter(
      (event) => event.type === 'error',
    );
    expect(errors).toEqual([]);
  });
});
