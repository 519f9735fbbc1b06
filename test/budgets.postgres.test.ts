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
  type StartOptions,
} from './support/processes.js';
import { request } from './support/server.js';

// `parley api` + two `parley worker` processes on one PostgreSQL, a tenant cost budget. The
// worker holding a turn's lease dies (SIGKILL) in the middle of the model call it reserved
// for; the other worker redoes the turn. The usage is billed once, and no reservation is
// left once the turn has ended.

const words = Array.from({ length: 60 }, (_, index) => `word${index + 1}`);
const message = words.join(' ');

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  await stopAllProcesses();
  for (const clean of cleanup.splice(0).reverse()) await clean();
});

const options: StartOptions = {
  env: {
    PARLEY_LEASE_TTL_MS: '3000',
    PARLEY_HEARTBEAT_MS: '1000',
    // 62 words at 30 ms: the reply streams for about two seconds.
    PARLEY_DEMO_DELAY_MS: '30',
  },
  config: {
    runtime: { poll_ms: 500, shutdown_grace_ms: 2000 },
    pricing: { 'demo/echo': { input: 1000, output: 1000 } },
    agents: { default: { model: 'demo/echo', max_output_tokens: 200 } },
    budgets: { daily: { tenant: 'default', metric: 'cost_usd', period: 'day', limit: 1000 } },
  },
};

async function budgetOf(url: string): Promise<{ used: number; reserved: number }> {
  const listed = await request(url, 'GET', '/api/v1/budgets');
  expect(listed.status).toBe(200);
  return listed.body.items.find((item: { budget_id: string }) => item.budget_id === 'daily');
}

describe('a worker killed mid-call under a spending budget (PostgreSQL)', () => {
  it('bills the usage once and leaks no reservation', async () => {
    const fresh = await freshStorage();
    cleanup.push(() => fresh.drop());
    const start = { ...options, databaseUrl: fresh.storage.url as string, readyTimeoutMs: 60_000 };
    const api = await startParley('api', start);
    const workers = await Promise.all([startParley('worker', start), startParley('worker', start)]);
    const db: Db = await openPostgres(fresh.storage.url as string, 2);
    cleanup.push(() => db.close());
    const url = api.url as string;

    const turnId = `turn_budget_${Date.now()}`;
    const admitted = await request(url, 'POST', '/api/v1/chat/turns', { turn_id: turnId, message });
    expect(admitted.status).toBe(202);
    const sessionId: string = admitted.body.session_id;
    const journal = () => readEvents(db, sessionId, 0, 100_000) as Promise<any[]>;
    await until(
      journal,
      (events) => events.filter((event) => event.type === 'text_delta').length >= 3,
      'the reply streaming',
    );
    // Mid-call: the worst case is held.
    const during = await budgetOf(url);
    expect(during.reserved).toBeGreaterThanOrEqual(0.2);

    const lease = await db.query<{ lease_owner: string | null }>(
      'select lease_owner from sessions where session_id = $1',
      [sessionId],
    );
    const pid = pidOfOwner(lease.rows[0]?.lease_owner ?? null);
    const holder = workers.find((worker) => worker.pid === pid);
    expect(holder, 'a worker holds the lease').toBeDefined();
    holder!.kill('SIGKILL');
    expect(await holder!.waitForExit()).toEqual({ code: null, signal: 'SIGKILL' });

    const events = await until(
      journal,
      (list) => list.some((event) => event.type === 'done'),
      'the other worker finishing the turn',
    );
    expect(events.filter((event) => event.type === 'turn_started')).toHaveLength(2);

    // Billed once: one usage event and one usage row, for the call that completed.
    expect(events.filter((event) => event.type === 'usage')).toHaveLength(1);
    const rows = await db.query<{ cost: number; calls: number }>(
      `select count(*)::int as calls, coalesce(sum(cost_usd), 0)::float8 as cost
         from usage where session_id = $1`,
      [sessionId],
    );
    expect(rows.rows[0]?.calls).toBe(1);
    const after = await budgetOf(url);
    expect(after.used).toBeCloseTo(rows.rows[0]?.cost ?? -1, 8);
    expect(after.reserved).toBe(0);
    const left = await db.query('select 1 from budget_reservations where session_id = $1', [
      sessionId,
    ]);
    expect(left.rowCount).toBe(0);
    await checkJournalInvariants(db);
  }, 180_000);
});
