import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { appendEvents } from '../src/store/appendEvents.js';
import { claimSession, claimSessions } from '../src/store/claimSession.js';
import { collectTurns } from '../src/store/collectTurns.js';
import type { Db } from '../src/store/db.js';
import { failTurn } from '../src/store/failTurn.js';
import { newEvent } from '../src/protocol/events.js';
import { releaseLease } from '../src/store/releaseLease.js';
import { renewLease } from '../src/store/renewLease.js';
import { startAttempt } from '../src/store/startAttempt.js';
import { LeaseLostError, type Lease, type SessionRow } from '../src/store/types.js';
import { openTestDb } from './support/db.js';
import { checkJournalInvariants } from './support/invariants.js';
import {
  admit,
  journal,
  runtimeConfig,
  sessionRow,
  sleep,
  startTestWorker,
  waitForLeaseExpiry,
  waitForTerminal,
  waitUntil,
  type TestWorker,
} from './support/runtime-helpers.js';

/**
 * RUNTIME.md, "Turns are leased, never locked": the claim query on a Db (no HTTP), and a
 * real Worker losing its lease mid-reply.
 */

let db: Db;
let closeDb: () => Promise<void>;
let counter = 0;
const turnId = () => `lease_${Date.now()}_${counter++}`;
const workers: TestWorker[] = [];

beforeAll(async () => {
  ({ db, close: closeDb } = await openTestDb());
});
afterEach(async () => {
  for (const worker of workers.splice(0)) await worker.stop();
  // Tests share one database and claim "any claimable session": retire what a test left
  // pending so the next test's claimers see only their own sessions.
  await db.query(
    `update sessions set input_cursor = input_count, lease_token = null, lease_owner = null,
            lease_expires_at = null, state = 'closed'
      where input_count > input_cursor`,
  );
});
afterAll(async () => {
  if (db) {
    await checkJournalInvariants(db);
    await closeDb();
  }
});

const claim = (token: string, ttlMs = 10_000) =>
  claimSession(db, { token, owner: `owner_${token}`, ttlMs, maxTurns: 50 });
const leaseOf = (row: SessionRow): Lease => ({
  sessionId: row.session_id,
  tenant: row.tenant,
  token: row.lease_token as string,
});
const textDelta = (turn: string) => [newEvent('text_delta', turn, { delta: 'x' })];

describe('claimSession', () => {
  it('gives a session to exactly one of several concurrent claimers', async () => {
    const { session_id: sessionId } = await admit(db, { turnId: turnId(), message: 'hello' });
    const tokens = Array.from({ length: 8 }, (_unused, index) => `concurrent_${index}`);
    const claims = await Promise.all(tokens.map((token) => claim(token)));
    const winners = claims.filter((row): row is NonNullable<typeof row> => row !== null);
    expect(winners).toHaveLength(1);
    const winner = winners[0] as SessionRow;
    expect(winner.session_id).toBe(sessionId);
    expect(winner.claim_count).toBe(1);
    expect(winner.state).toBe('running');
    const row = await sessionRow(db, sessionId);
    expect(row.lease_token).toBe(winner.lease_token);
    expect(tokens).toContain(row.lease_token);
    expect(row.lease_owner).toBe(`owner_${row.lease_token}`);
    // While the lease is live, nobody else gets it.
    expect(await claim('late')).toBeNull();
    expect((await sessionRow(db, sessionId)).lease_token).toBe(winner.lease_token);
  });

  it('spreads concurrent claimers over several sessions, one claimer per session', async () => {
    const sessions: string[] = [];
    for (let index = 0; index < 3; index++) {
      sessions.push((await admit(db, { turnId: turnId(), message: `s${index}` })).session_id);
    }
    const claims = await Promise.all(
      Array.from({ length: 7 }, (_unused, index) => claim(`spread_${index}`)),
    );
    const claimed = claims.filter((row): row is NonNullable<typeof row> => row !== null);
    expect(claimed.map((row) => row.session_id).sort()).toEqual([...sessions].sort());
    expect(claims.filter((row) => row === null)).toHaveLength(4);
  });

  it('claims up to one session per token in one statement, each under its own token', async () => {
    const sessions: string[] = [];
    for (let index = 0; index < 3; index++) {
      sessions.push((await admit(db, { turnId: turnId(), message: `many${index}` })).session_id);
    }
    const tokens = ['many_a', 'many_b', 'many_c', 'many_d'];
    const claimed = await claimSessions(db, {
      tokens,
      owner: 'owner_many',
      ttlMs: 10_000,
      maxTurns: 50,
    });
    expect(claimed.map((row) => row.session_id).sort()).toEqual([...sessions].sort());
    const held = claimed.map((row) => row.lease_token);
    expect(new Set(held).size).toBe(3);
    for (const row of claimed) {
      expect(tokens).toContain(row.lease_token);
      expect((await sessionRow(db, row.session_id)).lease_token).toBe(row.lease_token);
    }
    expect(await claim('after_many')).toBeNull();
  });

  it('skips sessions without pending input', async () => {
    const { session_id: sessionId } = await admit(db, { turnId: turnId(), message: 'only' });
    await db.query('update sessions set input_cursor = input_count where session_id = $1', [
      sessionId,
    ]);
    expect(await claim('nothing_to_do')).toBeNull();
  });

  it('is the recovery path: after the lease expires another claimer gets the session', async () => {
    const { session_id: sessionId } = await admit(db, { turnId: turnId(), message: 'recover' });
    const first = await claim('short_lived', 300);
    expect(first?.session_id).toBe(sessionId);
    expect(await claim('too_early')).toBeNull();

    await waitForLeaseExpiry(db, sessionId);
    const second = await claim('successor');
    expect(second?.session_id).toBe(sessionId);
    expect(second?.lease_token).toBe('successor');
    expect(second?.claim_count).toBe(2);

    // The first holder's token is dead for every token-gated write.
    const stale = leaseOf(first as SessionRow);
    const before = await sessionRow(db, sessionId);
    await expect(renewLease(db, stale, 10_000)).rejects.toBeInstanceOf(LeaseLostError);
    expect(await releaseLease(db, stale)).toBe(false);
    await expect(
      db.transaction((tx) => appendEvents(tx, stale, textDelta('t'), { progress: true })),
    ).rejects.toBeInstanceOf(LeaseLostError);
    const after = await sessionRow(db, sessionId);
    expect(after.lease_token).toBe('successor');
    expect(after.last_sequence).toBe(before.last_sequence);
    expect(after.lease_expires_at).toEqual(before.lease_expires_at);
    expect(after.claim_count).toBe(2);
  });
});

describe('releaseLease', () => {
  it('never moves the cursor past input admitted while it waits for the session row', async () => {
    const t1 = turnId();
    const { session_id: sessionId } = await admit(db, { turnId: t1, message: 'first' });
    const lease = leaseOf((await claim('releaser')) as SessionRow);
    await startAttempt(db, lease, {
      turnIds: [t1],
      attempt: 1,
      resetPrevious: false,
      seenSequence: null,
      historyBefore: 0,
      historyLimit: 0,
      historyBytes: 0,
    });
    await failTurn(db, lease, {
      turnIds: [t1],
      lastPosition: 1,
      code: 'provider_error',
      message: 'closed for the test',
      usage: [],
    });

    // An admission whose transaction has done all its work but not committed yet: it
    // holds the session row. (PGlite runs one transaction at a time, so there the release
    // simply runs after it; on PostgreSQL it reads its snapshot first, then waits.)
    let commit = () => {};
    const gate = new Promise<void>((resolve) => (commit = resolve));
    let holding = false;
    const hold = <T>(work: (tx: Db) => Promise<T>) =>
      db.transaction(async (tx) => {
        const result = await work(tx as Db);
        holding = true;
        await gate;
        return result;
      });
    // Whether the admission is one statement or several, it runs in a transaction that
    // stays open (holding the session row) until the gate opens.
    const slowDb: Db = {
      ...db,
      query: (statement, params) => hold((tx) => tx.query(statement, params)),
      transaction: (work) => hold(work),
    };
    const t2 = turnId();
    const admission = admit(slowDb, { sessionId, turnId: t2, message: 'second' });
    await waitUntil(() => holding, 'the admission holds the session row');
    const release = releaseLease(db, lease);
    await sleep(300);
    commit();
    await admission;

    expect(await release).toBe(true);
    const row = await sessionRow(db, sessionId);
    expect(row.lease_token).toBeNull();
    expect(row.input_count).toBe(2);
    expect(row.input_cursor).toBe(1);
    expect(row.state).toBe('queued');
    expect((await collectTurns(db, sessionId, 10)).queued.map((turn) => turn.turn_id)).toEqual([
      t2,
    ]);
    expect((await claim('next'))?.session_id).toBe(sessionId);
  });
});

describe('token-gated writes', () => {
  it('appendEvents with a wrong token throws LeaseLostError and writes nothing', async () => {
    const { session_id: sessionId } = await admit(db, { turnId: turnId(), message: 'gate' });
    const row = (await claim('rightful')) as SessionRow;
    const before = await sessionRow(db, sessionId);
    const eventsBefore = await journal(db, sessionId);
    const wrong: Lease = { ...leaseOf(row), token: 'impostor' };
    await expect(
      db.transaction(async (tx) => {
        await tx.query(
          `update sessions set title = 'written by the impostor' where session_id = $1`,
          [sessionId],
        );
        return appendEvents(tx, wrong, textDelta('t'), { progress: true, partialOutput: true });
      }),
    ).rejects.toBeInstanceOf(LeaseLostError);
    const after = await sessionRow(db, sessionId);
    // The whole transaction rolled back, including the caller's own earlier write.
    expect(after.title).toBe(before.title);
    expect(after.last_sequence).toBe(before.last_sequence);
    expect(after.partial_output).toBe(false);
    expect(after.claim_count).toBe(before.claim_count);
    expect(await journal(db, sessionId)).toEqual(eventsBefore);

    // The holder's own token works, and gets the next sequence, gapless.
    const sequence = await db.transaction((tx) =>
      appendEvents(tx, leaseOf(row), textDelta('t'), { progress: true }),
    );
    expect(sequence).toBe(before.last_sequence + 1);
    expect((await sessionRow(db, sessionId)).claim_count).toBe(0);
  });
});

describe('heartbeat', () => {
  it('keeps a lease alive through a reply that outlasts the ttl, against a competing worker', async () => {
    // The reply takes about three ttls; only renewals keep the competitor out.
    const config = runtimeConfig(
      { runtime: { lease_ttl_ms: 1500, heartbeat_ms: 300 } },
      { PARLEY_DEMO_DELAY_MS: '30' },
    );
    const words = Array.from({ length: 150 }, (_unused, index) => `beat${index}`).join(' ');
    const id = turnId();
    const { session_id: sessionId } = await admit(db, { turnId: id, message: words });
    const first = await startTestWorker(db, config, 'first');
    workers.push(first);
    await waitUntil(
      async () => (await sessionRow(db, sessionId)).lease_owner === 'first',
      'the first worker holds the session',
    );
    const competitor = await startTestWorker(db, config, 'competitor');
    workers.push(competitor);
    const claimedAt = (await sessionRow(db, sessionId)).lease_expires_at as Date;

    expect(await waitForTerminal(db, sessionId, id, 40_000)).toMatchObject({
      type: 'done',
      final_message: { content: `You said: ${words}` },
    });
    const events = await journal(db, sessionId);
    expect(events.filter((event) => event.type === 'turn_started')).toHaveLength(1);
    expect(events.some((event) => event.type === 'attempt_reset')).toBe(false);
    expect(first.calls).toHaveLength(1);
    expect(competitor.calls).toHaveLength(0);
    // The reply ran past the lease's first expiry: the heartbeat renewed it.
    const last = events[events.length - 1] as { at: string };
    expect(new Date(last.at).getTime()).toBeGreaterThan(claimedAt.getTime());
  });
});

describe('lease loss', () => {
  it('a worker whose lease is stolen stops writing and aborts its stream; the next owner redoes the turn', async () => {
    const config = runtimeConfig({}, { PARLEY_DEMO_DELAY_MS: '30' });
    const words = Array.from({ length: 120 }, (_unused, index) => `word${index}`).join(' ');
    const id = turnId();
    const { session_id: sessionId } = await admit(db, { turnId: id, message: words });
    const victim = await startTestWorker(db, config, 'victim');
    workers.push(victim);

    await waitUntil(
      async () =>
        (await journal(db, sessionId)).filter((event) => event.type === 'text_delta').length >= 2,
      'the victim streams text',
    );
    const stolen = await db.query<{ last_sequence: number }>(
      `update sessions set lease_token = 'thief', lease_owner = 'thief',
              lease_expires_at = now() + interval '1 hour'
        where session_id = $1
        returning last_sequence`,
      [sessionId],
    );
    const atSteal = stolen.rows[0]?.last_sequence as number;

    // The victim notices at its next token-gated write (or heartbeat) and stops.
    await waitUntil(() => victim.worker.activeSessions === 0, 'the victim gave up the session');
    const call = victim.calls.find((candidate) => candidate.input === words);
    expect(call).toBeDefined();
    expect(call?.cancelled === true || call?.signal?.aborted === true).toBe(true);
    expect(call?.finished).toBe(false);
    const partsRead = call?.partsRead;

    // Well past a heartbeat and many delta batches: nothing more from the victim.
    await sleep(config.runtime.heartbeatMs * 2);
    const quiet = await sessionRow(db, sessionId);
    expect(quiet.last_sequence).toBe(atSteal);
    expect(quiet.lease_token).toBe('thief');
    expect(quiet.lease_owner).toBe('thief');
    const events = await journal(db, sessionId);
    expect(events[events.length - 1]?.sequence).toBe(atSteal);
    expect(events.some((event) => ['done', 'error', 'usage'].includes(event.type))).toBe(false);
    expect(call?.partsRead).toBe(partsRead);
    await victim.stop();

    // The thief dies: its lease expires. A new worker redoes the turn.
    await db.query(
      `update sessions set lease_expires_at = now() - interval '1 second'
        where session_id = $1 and lease_token = 'thief'`,
      [sessionId],
    );
    const successor = await startTestWorker(db, config, 'successor');
    workers.push(successor);
    const done = await waitForTerminal(db, sessionId, id);
    expect(done).toMatchObject({
      type: 'done',
      turn_ids: [id],
      final_message: { content: `You said: ${words}` },
    });

    const after = (await journal(db, sessionId)).filter((event) => event.sequence > atSteal);
    expect(after[0]).toMatchObject({ type: 'attempt_reset', turn_id: id, attempt: 1 });
    expect(after[1]).toMatchObject({ type: 'turn_started', turn_id: id, attempt: 2 });
    const all = await journal(db, sessionId);
    expect(all.filter((event) => event.type === 'done')).toHaveLength(1);
    expect(all.filter((event) => event.type === 'turn_started')).toHaveLength(2);
    const redone = after
      .filter((event) => event.type === 'text_delta')
      .map((event) => event.delta)
      .join('');
    expect(redone).toBe(`You said: ${words}`);
    const transcript = await db.query<{ role: string }>(
      'select role from messages where session_id = $1 order by sequence',
      [sessionId],
    );
    expect(transcript.rows.map((row) => row.role)).toEqual(['user', 'assistant']);
    await waitUntil(
      async () => (await sessionRow(db, sessionId)).lease_token === null,
      'the successor released the session',
    );
    expect((await sessionRow(db, sessionId)).state).toBe('idle');
  });
});
