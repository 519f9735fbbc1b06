import { afterEach, describe, expect, it } from 'vitest';
import type { Db } from '../src/store/db.js';
import { openPostgres } from '../src/store/postgres.js';
import { freshStorage } from './support/db.js';
import { checkJournalInvariants } from './support/invariants.js';
import { until } from './support/poll.js';
import {
  pidOfOwner,
  startParley,
  stopAllProcesses,
  type ParleyProcess,
  type StartOptions,
} from './support/processes.js';
import { request } from './support/server.js';

// Executions survive a worker's death (issue 10): `parley api` and two `parley worker`
// processes on one PostgreSQL; one worker is SIGKILLed mid-iteration, or while a loop waits
// for its delay. The iteration resumes once (one turn, one done) and the delay fires once
// (the next iteration is admitted once).
const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  await stopAllProcesses();
  for (const clean of cleanup.splice(0).reverse()) await clean();
});

const words = Array.from({ length: 60 }, (_, index) => `word${index + 1}`).join(' ');

const options: StartOptions = {
  env: {
    PARLEY_LEASE_TTL_MS: '3000',
    PARLEY_HEARTBEAT_MS: '1000',
    // 62 words at 40 ms: an iteration's reply streams for about two and a half seconds.
    PARLEY_DEMO_DELAY_MS: '40',
  },
  config: {
    runtime: { poll_ms: 500, shutdown_grace_ms: 2000, execution_recheck_ms: 500 },
    missions: {
      long: { prompt: words },
      paced: {
        prompt: 'Poll the feed.',
        loop_prompt: '/decide continue:2',
        loop_delay_seconds: 4,
      },
    },
  },
};

interface Cluster {
  db: Db;
  url: string;
  api: ParleyProcess;
  workers: [ParleyProcess, ParleyProcess];
}

async function startCluster(): Promise<Cluster> {
  const fresh = await freshStorage();
  cleanup.push(() => fresh.drop());
  const start = { ...options, databaseUrl: fresh.storage.url as string, readyTimeoutMs: 60_000 };
  const api = await startParley('api', start);
  const workers = await Promise.all([startParley('worker', start), startParley('worker', start)]);
  const db = await openPostgres(fresh.storage.url as string, 2);
  cleanup.push(() => db.close());
  return { db, url: api.url as string, api, workers: workers };
}

function workerOf(cluster: Cluster, owner: string | null): ParleyProcess {
  const pid = pidOfOwner(owner);
  const found = cluster.workers.find((worker) => worker.pid === pid);
  if (!found) throw new Error(`owner ${owner} is not one of the workers`);
  return found;
}

async function dispatch(
  cluster: Cluster,
  mission: string,
): Promise<{ id: string; sessionId: string }> {
  const id = `crash_${mission}_${Date.now()}`;
  const answer = await request(cluster.url, 'POST', `/api/v1/missions/${mission}/executions`, {
    execution_id: id,
  });
  expect(answer.status).toBe(202);
  return { id, sessionId: answer.body.session_id };
}

const show = (cluster: Cluster, id: string) =>
  request(cluster.url, 'GET', `/api/v1/executions/${id}`).then((answer) => answer.body);

async function turnsOf(db: Db, sessionId: string): Promise<{ turn_id: string; state: string }[]> {
  return (
    await db.query<{ turn_id: string; state: string }>(
      'select turn_id, state from turns where session_id = $1 order by position',
      [sessionId],
    )
  ).rows;
}

async function donesOf(db: Db, sessionId: string): Promise<string[][]> {
  return (
    await db.query<{ turn_ids: string[] }>(
      `select coalesce(payload -> 'turn_ids', jsonb_build_array(turn_id)) as turn_ids from events
        where session_id = $1 and type = 'done' order by sequence`,
      [sessionId],
    )
  ).rows.map((row) => row.turn_ids);
}

describe('executions when a worker is SIGKILLed (PostgreSQL, two workers)', () => {
  it('resumes an iteration killed mid-reply once, on the other worker', async () => {
    const cluster = await startCluster();
    const { id, sessionId } = await dispatch(cluster, 'long');
    // Wait until the iteration's reply is streaming, then kill whoever holds its session.
    await until(
      () =>
        cluster.db.query<{ count: number }>(
          `select count(*)::int as count from events where session_id = $1 and type = 'text_delta'`,
          [sessionId],
        ),
      (found) => (found.rows[0]?.count ?? 0) >= 3,
      'the reply to stream',
    );
    const lease = await cluster.db.query<{ lease_owner: string | null }>(
      'select lease_owner from sessions where session_id = $1',
      [sessionId],
    );
    const victim = workerOf(cluster, lease.rows[0]?.lease_owner ?? null);
    victim.kill('SIGKILL');
    expect(await victim.waitForExit()).toEqual({ code: null, signal: 'SIGKILL' });

    const done = await until(
      () => show(cluster, id),
      (body) => ['success', 'error'].includes(body.status),
      'the execution to end',
      90_000,
    );
    expect(done).toMatchObject({ status: 'success', iteration: 1 });
    expect(done.result.content).toBe(`You said: ${words}`);
    const turnId = `exec.${id}.1`;
    expect(await turnsOf(cluster.db, sessionId)).toEqual([{ turn_id: turnId, state: 'done' }]);
    expect(await donesOf(cluster.db, sessionId)).toEqual([[turnId]]);
    const attempts = await cluster.db.query<{ count: number }>(
      `select count(*)::int as count from events where session_id = $1 and type = 'attempt_reset'`,
      [sessionId],
    );
    expect(attempts.rows[0]?.count).toBe(1);
    await checkJournalInvariants(cluster.db);
  }, 180_000);

  it('fires a delay whose worker was killed exactly once', async () => {
    const cluster = await startCluster();
    const { id, sessionId } = await dispatch(cluster, 'paced');
    const waiting = await until(
      () => show(cluster, id),
      (body) => body.status === 'waiting',
      'the loop to wait for its delay',
      60_000,
    );
    expect(waiting).toMatchObject({ iteration: 1, loop_status: 'idle' });
    // The worker that advanced it last (and set the timer) dies during the delay.
    const owner = await cluster.db.query<{
      lease_owner: string | null;
      lease_token: string | null;
    }>('select lease_owner, lease_token from executions where execution_id = $1', [id]);
    expect(owner.rows[0]?.lease_token).toBeNull();
    const victim = workerOf(cluster, owner.rows[0]?.lease_owner ?? null);
    victim.kill('SIGKILL');
    await victim.waitForExit();

    const done = await until(
      () => show(cluster, id),
      (body) => ['success', 'error', 'limit_reached'].includes(body.status),
      'the execution to end',
      90_000,
    );
    expect(done).toMatchObject({
      status: 'success',
      loop_status: 'completed',
      iteration: 2,
      loop_decision: { decision: 'complete', iteration: 2 },
    });
    const survivor = cluster.workers.find((worker) => worker !== victim) as ParleyProcess;
    const last = await cluster.db.query<{ lease_owner: string }>(
      'select lease_owner from executions where execution_id = $1',
      [id],
    );
    expect(pidOfOwner(last.rows[0]?.lease_owner ?? null)).toBe(survivor.pid);
    const turns = await turnsOf(cluster.db, sessionId);
    expect(turns.map((turn) => turn.turn_id)).toEqual([`exec.${id}.1`, `exec.${id}.2`]);
    expect(await donesOf(cluster.db, sessionId)).toEqual([[`exec.${id}.1`], [`exec.${id}.2`]]);
    // The delay was honoured: iteration 2 was admitted at least the delay after the decision.
    const times = await cluster.db.query<{ decided: Date; admitted: Date }>(
      `select (select min(e.at) from events e where e.session_id = $1 and e.type = 'execution_status'
                 and e.payload ->> 'status' = 'waiting') as decided,
              (select m.created_at from messages m where m.session_id = $1 and m.turn_id = $2
                 and m.role = 'user') as admitted`,
      [sessionId, `exec.${id}.2`],
    );
    const row = times.rows[0] as { decided: Date; admitted: Date };
    expect(row.admitted.getTime() - row.decided.getTime()).toBeGreaterThanOrEqual(3_900);
    await checkJournalInvariants(cluster.db);
  }, 180_000);
});
