import { afterEach, describe, expect, it } from 'vitest';
import type { Db } from '../src/store/db.js';
import { openPostgres } from '../src/store/postgres.js';
import { freshStorage } from './support/db.js';
import { checkJournalInvariants } from './support/invariants.js';
import {
  pidOfOwner,
  startParley,
  stopAllProcesses,
  type ParleyProcess,
  type StartOptions,
} from './support/processes.js';
import { request } from './support/server.js';
import { SseClient } from './support/sse.js';

// `parley api` + two `parley worker` processes on one PostgreSQL. The worker holding a
// turn's lease dies (SIGKILL) or is stopped (SIGTERM) mid-reply; the other one finishes
// the turn, and the client's one SSE connection sees every event exactly once.

const words = Array.from({ length: 60 }, (_, index) => `word${index + 1}`);
const message = words.join(' ');
const expectedReply = `You said: ${message}`;

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  await stopAllProcesses();
  for (const clean of cleanup.splice(0).reverse()) await clean();
});

interface Cluster {
  db: Db;
  api: ParleyProcess;
  workers: [ParleyProcess, ParleyProcess];
}

/** A fresh database, `parley api` (which migrates it) and then two workers. */
async function startCluster(options: StartOptions): Promise<Cluster> {
  const fresh = await freshStorage();
  cleanup.push(() => fresh.drop());
  const url = fresh.storage.url as string;
  const start = { ...options, databaseUrl: url, readyTimeoutMs: 60_000 };
  const api = await startParley('api', start);
  const [first, second] = await Promise.all([
    startParley('worker', start),
    startParley('worker', start),
  ]);
  const db = await openPostgres(url, 2);
  cleanup.push(() => db.close());
  return { db, api, workers: [first, second] };
}

async function leaseOf(
  db: Db,
  sessionId: string,
): Promise<{
  lease_owner: string | null;
  lease_token: string | null;
  lease_expires_at: Date | null;
  db_now: Date;
}> {
  const found = await db.query<{
    lease_owner: string | null;
    lease_token: string | null;
    lease_expires_at: Date | null;
    db_now: Date;
  }>(
    `select lease_owner, lease_token, lease_expires_at, now() as db_now
       from sessions where session_id = $1`,
    [sessionId],
  );
  return found.rows[0] as Awaited<ReturnType<typeof leaseOf>>;
}

/** Admits the long turn and follows it until some of the reply has streamed. */
async function admitAndFollow(
  cluster: Cluster,
): Promise<{ turnId: string; sessionId: string; stream: SseClient }> {
  const url = cluster.api.url as string;
  const turnId = `turn_crash_${Date.now()}`;
  const admitted = await request(url, 'POST', '/api/v1/chat/turns', { turn_id: turnId, message });
  expect(admitted.status).toBe(202);
  const sessionId: string = admitted.body.session_id;
  const stream = await SseClient.open(url, sessionId);
  cleanup.push(() => stream.close());
  expect(stream.status).toBe(200);
  await stream.waitFor(
    (client) => client.events.filter((event) => event.type === 'text_delta').length >= 3,
    30_000,
  );
  return { turnId, sessionId, stream };
}

/** The worker whose pid is in the session's lease_owner (`${hostname}:${pid}`), and the other. */
async function holderOf(
  cluster: Cluster,
  sessionId: string,
): Promise<{ holder: ParleyProcess; other: ParleyProcess; owner: string; expiresAt: Date }> {
  const lease = await leaseOf(cluster.db, sessionId);
  const pid = pidOfOwner(lease.lease_owner);
  const [first, second] = cluster.workers;
  const holder = first.pid === pid ? first : second.pid === pid ? second : null;
  expect(holder, `lease owner ${lease.lease_owner} is one of the two workers`).not.toBeNull();
  return {
    holder: holder as ParleyProcess,
    other: holder === first ? second : first,
    owner: lease.lease_owner as string,
    expiresAt: lease.lease_expires_at as Date,
  };
}

/** Exactly-once delivery, one done, and a reset second attempt that streams the whole reply. */
function expectRecoveredStream(stream: SseClient, turnId: string): void {
  const events = stream.events;
  const sequences = events.map((event) => event.sequence);
  expect(sequences).toEqual(Array.from({ length: sequences.length }, (_, index) => index + 1));
  for (const frame of stream.frames.filter((frame) => frame.id !== null)) {
    expect(Number(frame.id)).toBe(frame.data.sequence);
    expect(frame.event).toBe(frame.data.type);
  }
  const dones = events.filter((event) => event.type === 'done');
  expect(dones).toHaveLength(1);
  expect(dones[0]).toMatchObject({
    turn_id: turnId,
    turn_ids: [turnId],
    final_message: { role: 'assistant', content: expectedReply },
  });
  expect(events.at(-1)?.type).toBe('done');
  expect(events.filter((event) => event.type === 'error' || event.type === 'cancelled')).toEqual(
    [],
  );

  const types = events.map((event) => event.type);
  const started = types.flatMap((type, index) => (type === 'turn_started' ? [index] : []));
  expect(started, `two attempts; saw ${types.join(' ')}`).toHaveLength(2);
  const [firstStart, secondStart] = started as [number, number];
  expect(events[firstStart]).toMatchObject({ attempt: 1, turn_ids: [turnId] });
  expect(events[secondStart]).toMatchObject({ attempt: 2, turn_ids: [turnId] });
  expect(types.filter((type) => type === 'attempt_reset')).toHaveLength(1);
  expect(types[secondStart - 1]).toBe('attempt_reset');
  expect(events[secondStart - 1]).toMatchObject({ turn_id: turnId, attempt: 1 });
  const textOf = (from: number, to: number) =>
    events
      .slice(from, to)
      .filter((event) => event.type === 'text_delta')
      .map((event) => event.delta)
      .join('');
  const abandoned = textOf(firstStart, secondStart);
  expect(abandoned.length).toBeGreaterThan(0);
  expect(abandoned.length).toBeLessThan(expectedReply.length);
  expect(expectedReply.startsWith(abandoned)).toBe(true);
  expect(textOf(secondStart, events.length)).toBe(expectedReply);
}

async function expectFinalState(db: Db, sessionId: string): Promise<void> {
  await checkJournalInvariants(db);
  const session = await db.query<{ lease_token: string | null; state: string }>(
    'select lease_token, state from sessions where session_id = $1',
    [sessionId],
  );
  expect(session.rows[0]).toEqual({ lease_token: null, state: 'idle' });
  const replies = await db.query<{ content: string }>(
    `select content from messages where session_id = $1 and role = 'assistant'`,
    [sessionId],
  );
  expect(replies.rows).toEqual([{ content: expectedReply }]);
}

async function stopGracefully(processes: ParleyProcess[]): Promise<void> {
  for (const proc of processes) proc.kill('SIGTERM');
  for (const proc of processes) {
    expect(await proc.waitForExit(), `${proc.role} ${proc.pid} exits cleanly`).toEqual({
      code: 0,
      signal: null,
    });
  }
}

describe('parley worker killed with SIGKILL mid-reply (PostgreSQL)', () => {
  const leaseTtlMs = 3000;
  const options: StartOptions = {
    env: {
      PARLEY_LEASE_TTL_MS: String(leaseTtlMs),
      PARLEY_HEARTBEAT_MS: '1000',
      // 62 words at 30 ms: the reply streams for about two seconds, and the bound below
      // includes streaming all of it again on the other worker.
      PARLEY_DEMO_DELAY_MS: '30',
    },
    config: { runtime: { poll_ms: 500, shutdown_grace_ms: 2000 } },
  };

  it('the other worker completes the turn within ttl + 5 s; the client sees each event once', async () => {
    const cluster = await startCluster(options);
    const { turnId, sessionId, stream } = await admitAndFollow(cluster);
    const { holder, other } = await holderOf(cluster, sessionId);

    const killedAt = Date.now();
    holder.kill('SIGKILL');
    // The second attempt runs on the surviving worker.
    await stream.waitFor(
      (client) =>
        client.events.some((event) => event.type === 'turn_started' && event.attempt === 2),
      30_000,
    );
    const takeover = await leaseOf(cluster.db, sessionId);
    await stream.waitForType('done', 30_000);
    const recoveryMs = Date.now() - killedAt;

    // RUNTIME.md: "a killed worker's turn completes on another worker within ttl + 5 s".
    expect(recoveryMs, 'kill → done on the other worker').toBeLessThanOrEqual(leaseTtlMs + 5000);
    if (takeover.lease_owner !== null) expect(pidOfOwner(takeover.lease_owner)).toBe(other.pid);
    expect(await holder.waitForExit()).toEqual({ code: null, signal: 'SIGKILL' });
    expect(stream.closed, 'the API process kept the stream open').toBe(false);
    expectRecoveredStream(stream, turnId);
    stream.close();

    await stopGracefully([other, cluster.api]);
    await expectFinalState(cluster.db, sessionId);
  }, 180_000);
});

describe('parley worker stopped with SIGTERM mid-reply (PostgreSQL)', () => {
  // A long ttl: a takeover before the stopped worker's lease would have expired can only
  // come from the lease being released.
  const leaseTtlMs = 15_000;
  const options: StartOptions = {
    env: {
      PARLEY_LEASE_TTL_MS: String(leaseTtlMs),
      PARLEY_HEARTBEAT_MS: '1000',
      PARLEY_DEMO_DELAY_MS: '40',
    },
    // The running step gets 300 ms to finish, far less than the rest of the reply.
    config: { runtime: { poll_ms: 500, shutdown_grace_ms: 300 } },
  };

  it('releases the lease at once, the other worker completes the turn, and it exits 0', async () => {
    const cluster = await startCluster(options);
    const { turnId, sessionId, stream } = await admitAndFollow(cluster);
    const { holder, other, owner, expiresAt } = await holderOf(cluster, sessionId);

    holder.kill('SIGTERM');
    // Watch the lease row until it leaves the stopped worker.
    let heldUntil = expiresAt;
    let moved = await leaseOf(cluster.db, sessionId);
    const deadline = Date.now() + 30_000;
    while (moved.lease_owner === owner) {
      heldUntil = moved.lease_expires_at as Date;
      if (Date.now() > deadline) throw new Error(`the lease never left ${owner}`);
      await new Promise((resolveWait) => setTimeout(resolveWait, 20));
      moved = await leaseOf(cluster.db, sessionId);
    }
    // Released, not expired: it left the worker while its expiry was still in the future.
    expect(moved.db_now.getTime()).toBeLessThan(heldUntil.getTime());
    if (moved.lease_owner !== null) expect(pidOfOwner(moved.lease_owner)).toBe(other.pid);
    else expect(moved.lease_token).toBeNull();

    expect(await holder.waitForExit(), 'the stopped worker exits cleanly').toEqual({
      code: 0,
      signal: null,
    });
    expect(holder.stdout).toContain('parley worker: SIGTERM received');
    expect(holder.stdout).toContain('parley worker: stopped');

    await stream.waitFor(
      (client) =>
        client.events.some((event) => event.type === 'turn_started' && event.attempt === 2),
      30_000,
    );
    const running = await leaseOf(cluster.db, sessionId);
    if (running.lease_owner !== null) expect(pidOfOwner(running.lease_owner)).toBe(other.pid);
    await stream.waitForType('done', 30_000);
    expectRecoveredStream(stream, turnId);
    stream.close();

    await stopGracefully([other, cluster.api]);
    await expectFinalState(cluster.db, sessionId);
  }, 180_000);
});
