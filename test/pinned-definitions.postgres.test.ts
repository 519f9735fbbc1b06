import { afterEach, describe, expect, it } from 'vitest';
import type { Db } from '../src/store/db.js';
import { openPostgres } from '../src/store/postgres.js';
import { readEvents } from '../src/store/readEvents.js';
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

// Definitions pinned per run across processes on one PostgreSQL: a turn that started with
// an agent revision keeps it after its worker dies (SIGKILL) or is stopped for a deploy
// (SIGTERM), on a worker that only ever loaded the edited definition.

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  await stopAllProcesses();
  for (const clean of cleanup.splice(0).reverse()) await clean();
});

const agents = {
  default: {},
  pinned: { model: 'demo/echo', instructions: '/sign v1', tools: { calculator: 'approve' } },
};

async function freshDatabase(): Promise<{ url: string; db: Db }> {
  const fresh = await freshStorage();
  cleanup.push(() => fresh.drop());
  const url = fresh.storage.url as string;
  const db = await openPostgres(url, 2);
  cleanup.push(() => db.close());
  return { url, db };
}

const journal = (db: Db, sessionId: string): Promise<any[]> =>
  readEvents(db, sessionId, 0, 100_000) as Promise<any[]>;
const count = (events: any[], type: string) => events.filter((event) => event.type === type).length;

/** Edits the agent's instructions through the API (dev mode: an admin); the new revision. */
async function editInstructions(api: string, instructions: string): Promise<number> {
  const current = await request(api, 'GET', '/api/v1/agents/pinned');
  expect(current.status).toBe(200);
  const put = await request(api, 'PUT', '/api/v1/agents/pinned', {
    ...current.body.definition,
    instructions,
  });
  expect(put.status).toBe(200);
  const listed = await request(api, 'GET', '/api/v1/agents');
  return listed.body.items.find((item: any) => item.name === 'pinned').revision as number;
}

describe('pinned revisions across processes (PostgreSQL)', () => {
  it('a worker killed while the turn waits between steps: another worker resumes it with the recorded revision', async () => {
    const { url, db } = await freshDatabase();
    const options: StartOptions = {
      databaseUrl: url,
      readyTimeoutMs: 60_000,
      env: { PARLEY_LEASE_TTL_MS: '3000', PARLEY_HEARTBEAT_MS: '1000' },
      config: { agents, runtime: { poll_ms: 300 } },
    };
    const api = await startParley('api', options);
    const first = await startParley('worker', options);
    const apiUrl = api.url as string;

    const admitted = await request(apiUrl, 'POST', '/api/v1/chat/turns', {
      turn_id: `pin_kill_${Date.now()}`,
      agent: 'pinned',
      message: '/tool calculator {"expression": "6*7"}',
    });
    expect(admitted.status).toBe(202);
    const sessionId = admitted.body.session_id as string;
    const waiting = await until(
      () => journal(db, sessionId),
      (events) => count(events, 'input_required') === 1,
      'the approval request',
    );
    const recorded = waiting.find((event) => event.type === 'turn_started').agent_revision;
    expect(typeof recorded).toBe('number');

    // The only worker dies between the steps; the agent is edited; a new worker starts
    // that has only ever seen the edit.
    first.kill('SIGKILL');
    await first.waitForExit();
    const edited = await editInstructions(apiUrl, '/sign v2');
    expect(edited).toBeGreaterThan(recorded);
    const second = await startParley('worker', options);

    const required = waiting.find((event) => event.type === 'input_required');
    const approved = await request(
      apiUrl,
      'POST',
      `/api/v1/chat/sessions/${sessionId}/inputs/${required.request_id}`,
      { expected_sequence: required.sequence, approved: true },
    );
    expect(approved.status).toBe(200);
    const events = await until(
      () => journal(db, sessionId),
      (list) => count(list, 'done') === 1,
      'the reply on the second worker',
    );
    const started = events.filter((event) => event.type === 'turn_started');
    expect(started.length).toBeGreaterThanOrEqual(2);
    for (const event of started) {
      expect(event).toMatchObject({ agent: 'pinned', agent_revision: recorded });
    }
    const done = events.find((event) => event.type === 'done');
    expect(done.final_message.content).toContain('Tool calculator returned');
    expect(done.final_message.content).toContain('(signed: v1)');

    // The next turn takes the edit.
    const next = await request(apiUrl, 'POST', '/api/v1/chat/turns', {
      turn_id: `pin_kill_next_${Date.now()}`,
      session_id: sessionId,
      message: 'and now',
    });
    expect(next.status).toBe(202);
    const after = await until(
      () => journal(db, sessionId),
      (list) => count(list, 'done') === 2,
      'the next reply',
    );
    expect(after.filter((event) => event.type === 'turn_started').at(-1)).toMatchObject({
      agent_revision: edited,
    });
    expect(after.filter((event) => event.type === 'done').at(-1).final_message.content).toBe(
      'You said: and now\n(signed: v2)',
    );

    await checkJournalInvariants(db);
    second.kill('SIGTERM');
    api.kill('SIGTERM');
    expect(await second.waitForExit()).toEqual({ code: 0, signal: null });
    expect(await api.waitForExit()).toEqual({ code: 0, signal: null });
  }, 180_000);

  it('SIGTERM mid-step: the step is handed over within the grace period, the log says so, and the other worker finishes it with the recorded revision', async () => {
    const { url, db } = await freshDatabase();
    const options: StartOptions = {
      databaseUrl: url,
      readyTimeoutMs: 60_000,
      // A long ttl: a takeover before it expires can only come from a released lease.
      env: {
        PARLEY_LEASE_TTL_MS: '15000',
        PARLEY_HEARTBEAT_MS: '1000',
        PARLEY_DEMO_DELAY_MS: '40',
      },
      // The running step gets 300 ms, far less than its reply takes to stream.
      config: { agents, runtime: { poll_ms: 300, shutdown_grace_ms: 300 } },
    };
    const api = await startParley('api', options);
    const workers = await Promise.all([
      startParley('worker', options),
      startParley('worker', options),
    ]);
    const apiUrl = api.url as string;
    const message = Array.from({ length: 60 }, (_, index) => `word${index + 1}`).join(' ');
    const admitted = await request(apiUrl, 'POST', '/api/v1/chat/turns', {
      turn_id: `pin_term_${Date.now()}`,
      agent: 'pinned',
      message,
    });
    expect(admitted.status).toBe(202);
    const sessionId = admitted.body.session_id as string;
    const streaming = await until(
      () => journal(db, sessionId),
      (events) => count(events, 'text_delta') >= 3,
      'the reply streaming',
    );
    const recorded = streaming.find((event) => event.type === 'turn_started').agent_revision;
    const edited = await editInstructions(apiUrl, '/sign v2');
    expect(edited).toBeGreaterThan(recorded);

    const lease = await db.query<{ lease_owner: string | null }>(
      'select lease_owner from sessions where session_id = $1',
      [sessionId],
    );
    const pid = pidOfOwner(lease.rows[0]?.lease_owner ?? null);
    const holder = workers.find((worker) => worker.pid === pid) as ParleyProcess;
    expect(holder, 'one of the workers holds the turn').toBeDefined();
    const other = workers.find((worker) => worker !== holder) as ParleyProcess;
    holder.kill('SIGTERM');
    expect(await holder.waitForExit()).toEqual({ code: 0, signal: null });
    // What the stopped worker did with the step in hand: aborted at the bound, handed over.
    const summary = holder.stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line))
      .find((entry) => entry.kind === 'sessions' && entry.handed_over !== undefined);
    expect(summary).toMatchObject({ running: 1, finished: 0, handed_over: 1, grace_ms: 300 });
    expect(holder.stdout).toContain('shutdown: turn handed over');

    const events = await until(
      () => journal(db, sessionId),
      (list) => count(list, 'done') === 1,
      'the reply on the other worker',
    );
    const started = events.filter((event) => event.type === 'turn_started');
    expect(started.map((event) => event.attempt)).toEqual([1, 2]);
    for (const event of started) {
      expect(event).toMatchObject({ agent: 'pinned', agent_revision: recorded });
    }
    expect(count(events, 'attempt_reset')).toBe(1);
    const expected = `You said: ${message}\n(signed: v1)`;
    expect(events.find((event) => event.type === 'done').final_message).toMatchObject({
      content: expected,
    });
    const replies = await db.query<{ content: string }>(
      `select content from messages where session_id = $1 and role = 'assistant'`,
      [sessionId],
    );
    expect(replies.rows).toEqual([{ content: expected }]);
    await checkJournalInvariants(db);

    other.kill('SIGTERM');
    api.kill('SIGTERM');
    expect(await other.waitForExit()).toEqual({ code: 0, signal: null });
    expect(await api.waitForExit()).toEqual({ code: 0, signal: null });
  }, 180_000);
});
