import { afterEach, describe, expect, it } from 'vitest';
import { openPostgres } from '../src/store/postgres.js';
import { readEvents } from '../src/store/readEvents.js';
import { freshStorage } from './support/db.js';
import { checkJournalInvariants } from './support/invariants.js';
import { until } from './support/poll.js';
import { startParley, stopAllProcesses, type StartOptions } from './support/processes.js';
import { request } from './support/server.js';

// Approval deadlines, escalations and reminders are rows, not timers in memory: the
// workers are SIGKILLed while approvals wait, what falls due passes while no worker lives,
// then two workers start at once and both timers race. Each request is resolved exactly
// once over the whole journal (one input_resolved), each step of its chain and its
// reminder journaled once, each rejected call gets one tool result, each turn one done.

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  await stopAllProcesses();
  for (const clean of cleanup.splice(0).reverse()) await clean();
});

/**
 * An API and two workers on a fresh database, four sessions each waiting for two approvals
 * of `agent`; the workers are SIGKILLed once all eight wait, and `untilDue` (a query's
 * count over input_requests) reaches eight while none lives; then two workers start at
 * once. Returns every session's journal once each turn is done.
 */
async function crashWhileWaiting(agent: Record<string, unknown>, untilDue: string) {
  const fresh = await freshStorage();
  cleanup.push(() => fresh.drop());
  const url = fresh.storage.url as string;
  const options: StartOptions = {
    databaseUrl: url,
    readyTimeoutMs: 60_000,
    config: {
      runtime: { lease_ttl_ms: 3000, heartbeat_ms: 1000, poll_ms: 200 },
      agents: { default: { model: 'demo/echo', tools: { calculator: 'approve' }, ...agent } },
    },
    env: { PARLEY_DEMO_DELAY_MS: '0' },
  };
  const api = await startParley('api', options);
  const workers = [await startParley('worker', options), await startParley('worker', options)];
  const db = await openPostgres(url, 2);
  cleanup.push(() => db.close());
  const base = api.url as string;

  const sessions: string[] = [];
  for (let index = 0; index < 4; index++) {
    const admitted = await request(base, 'POST', '/api/v1/chat/turns', {
      turn_id: `crash_deadline_${index}`,
      message: `/tool calculator {"expression": "${index}+1"}\n/tool calculator {"expression": "${index}+2"}`,
    });
    expect(admitted.status).toBe(202);
    sessions.push(admitted.body.session_id as string);
  }
  const count = async (filter: string) =>
    (
      await db.query<{ n: number }>(
        `select count(*) filter (where ${filter})::integer as n from input_requests`,
      )
    ).rows[0]?.n ?? 0;
  await until(
    () => count('true'),
    (total) => total === 8,
    'eight approvals waiting',
  );

  for (const worker of workers) worker.child.kill('SIGKILL');
  for (const worker of workers) expect((await worker.exited).signal).toBe('SIGKILL');
  // What the test waits for falls due while no worker lives (the API runs no timer).
  await until(
    () => count(untilDue),
    (due) => due === 8,
    'everything due',
  );

  await Promise.all([startParley('worker', options), startParley('worker', options)]);
  const journals = await until(
    () => Promise.all(sessions.map((sessionId) => readEvents(db, sessionId, 0, 100_000))),
    (all) => all.every((events) => events.some((event) => event.type === 'done')),
    'every turn done',
    90_000,
  );
  const requests = await db.query<{ request_id: string; state: string; approved: boolean }>(
    'select request_id, state, approved from input_requests order by request_id',
  );
  expect(requests.rows).toHaveLength(8);
  for (const row of requests.rows) expect(row).toMatchObject({ state: 'timeout', approved: false });
  for (const events of journals) {
    const required = events.filter((event) => event.type === 'input_required');
    expect(required).toHaveLength(2);
    for (const asked of required) {
      const resolved = events.filter(
        (event: any) => event.type === 'input_resolved' && event.request_id === asked.request_id,
      );
      expect(resolved).toHaveLength(1);
      expect(resolved[0]).toMatchObject({
        approved: false,
        state: 'timeout',
        actor: { user: 'system:timeout' },
      });
      const results = events.filter(
        (event: any) => event.type === 'tool_result' && event.call_id === asked.call_id,
      );
      expect(results).toHaveLength(1);
      expect(results[0]).toMatchObject({ ok: false, error: { code: 'approval_timeout' } });
    }
    expect(events.filter((event) => event.type === 'done')).toHaveLength(1);
  }
  await checkJournalInvariants(db);
  return journals;
}

describe('approval deadlines survive crashes', () => {
  it('expires each due request exactly once after the workers were killed', async () => {
    await crashWhileWaiting({ approval_timeout_ms: 1500 }, 'deadline_at <= now()');
  });

  it('takes each escalation step and reminder exactly once, in order, after the workers were killed', async () => {
    // Steps at 1.5 s and 2.5 s, the reminder at 4 s; the deadline at 15 s comes after the
    // restart, so the catch-up round meets every step due and none expired.
    const journals = await crashWhileWaiting(
      {
        approval_timeout_ms: 15_000,
        escalate: [
          { after_ms: 1500, to: 'role:lead' },
          { after_ms: 2500, to: 'role:admin' },
        ],
        remind_before_ms: 11_000,
      },
      "(nudges -> -1 ->> 'at')::timestamptz <= now()",
    );
    for (const events of journals) {
      for (const asked of events.filter((event) => event.type === 'input_required')) {
        const nudges = events
          .filter(
            (event: any) =>
              (event.type === 'input_escalated' || event.type === 'input_reminder') &&
              event.request_id === asked.request_id,
          )
          .map((event: any) => (event.type === 'input_escalated' ? event.to : 'reminder'));
        expect(nudges).toEqual(['role:lead', 'role:admin', 'reminder']);
      }
    }
  });
});
