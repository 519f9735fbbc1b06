import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readEvents } from '../src/store/readEvents.js';
import { builtInTools } from '../src/tools/registry.js';
import type { Tool } from '../src/tools/types.js';
import { checkJournalInvariants } from './support/invariants.js';
import { until } from './support/poll.js';
import { startTestWorker, type TestWorker } from './support/runtime-helpers.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// Budgets on tool calls and wall time, and the execution scope (docs/governance.md,
// "Budgets that are enforced"), on the engine the suite runs on.

const ops = { authorization: 'Bearer ops-key' };

let server: TestServer;
let worker: TestWorker;
let counter = 0;

/** A tool that takes a little while, so that its call has a duration to bill. */
const nap: Tool = {
  name: 'fake__nap',
  description: 'waits a moment (test)',
  inputSchema: { type: 'object', properties: {}, additionalProperties: false },
  source: 'mcp:fake',
  execute: async () => {
    await new Promise((resolve) => setTimeout(resolve, 25));
    return { rested: true };
  },
};

beforeAll(async () => {
  server = await startTestServer(
    {
      auth: { keys: [{ key_env: 'K_OPS', tenant: 'acme', user: 'ops', roles: ['admin'] }] },
      // Declared so agents may name `fake__…` tools; the tool itself is the test's.
      mcp_servers: { fake: { command: 'node', args: ['-e', ''] } },
      agents: {
        default: { model: 'demo/echo' },
        counted: { model: 'demo/echo', tools: { calculator: 'allow' } },
        timed: { model: 'demo/echo', tools: { fake__nap: 'allow' } },
      },
    },
    { K_OPS: 'ops-key' },
    { api: true, worker: false },
  );
  const tools = builtInTools({});
  tools.set(nap.name, nap);
  worker = await startTestWorker(server.db, server.config, 'budgets-calls-time', tools);
});
afterAll(async () => {
  await worker?.stop();
  if (server) {
    await checkJournalInvariants(server.db);
    await server.close();
  }
});

const count = (events: any[], type: string) => events.filter((event) => event.type === type).length;

const journalUntil = (sessionId: string, done: (events: any[]) => boolean): Promise<any[]> =>
  until(
    () => readEvents(server.db, sessionId, 0, 100_000) as Promise<any[]>,
    done,
    `the journal of ${sessionId}`,
  );

async function admit(message: string, options: { sessionId?: string; agent?: string } = {}) {
  const turnId = `bct_${counter++}`;
  const response = await request(
    server.url,
    'POST',
    '/api/v1/chat/turns',
    {
      turn_id: turnId,
      message,
      ...(options.sessionId ? { session_id: options.sessionId } : {}),
      ...(options.agent ? { agent: options.agent } : {}),
    },
    ops,
  );
  expect(response.status, JSON.stringify(response.body)).toBe(202);
  return { sessionId: response.body.session_id as string, turnId };
}

const put = async (id: string, body: unknown) => {
  const response = await request(server.url, 'PUT', `/api/v1/budgets/${id}`, body, ops);
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body;
};
const remove = (id: string) =>
  request(server.url, 'DELETE', `/api/v1/budgets/${id}`, undefined, ops);

async function budget(id: string): Promise<any> {
  const listed = await request(server.url, 'GET', '/api/v1/budgets', undefined, ops);
  expect(listed.status).toBe(200);
  return listed.body.items.find((item: any) => item.budget_id === id);
}

const approve = (sessionId: string, required: any) =>
  request(
    server.url,
    'POST',
    `/api/v1/chat/sessions/${sessionId}/inputs/${required.request_id}`,
    { expected_sequence: required.sequence, approved: true },
    ops,
  );

const twoSums = '/tool calculator {"expression": "1+1"}\n/tool calculator {"expression": "2+2"}';

describe('a tool-call budget', () => {
  it('counts the calls that ran, denies the calls past its limit, then asks for more', async () => {
    await put('acme_calls', {
      scope: 'agent',
      scope_id: 'counted',
      metric: 'tool_calls',
      period: 'day',
      limit: 3,
    });
    const first = await admit(twoSums, { agent: 'counted' });
    const done = await journalUntil(first.sessionId, (events) => count(events, 'done') === 1);
    expect(done.filter((event) => event.type === 'usage')[0]).toMatchObject({ tool_calls: 2 });
    expect(await budget('acme_calls')).toMatchObject({ used: 2, reserved: 0 });

    // One call is left: the first of the next two runs, the second does not.
    const second = await admit(twoSums, { agent: 'counted', sessionId: first.sessionId });
    const waiting = await journalUntil(
      first.sessionId,
      (events) => count(events, 'input_required') === 1,
    );
    const results = waiting.filter(
      (event) => event.type === 'tool_result' && event.turn_id === second.turnId,
    );
    expect(results.map((result) => result.ok)).toEqual([true, false]);
    expect(results[1].error).toMatchObject({ code: 'budget_exhausted' });
    expect(await budget('acme_calls')).toMatchObject({ used: 3 });
    // The next step could call a tool and the budget has none left: a person is asked.
    const required = waiting.find((event) => event.type === 'input_required');
    expect(required).toMatchObject({ kind: 'budget_extension', turn_id: second.turnId });
    expect(required.prompt).toContain('"acme_calls"');
    expect(required.prompt).toContain('tool calls');

    await put('acme_calls', {
      scope: 'agent',
      scope_id: 'counted',
      metric: 'tool_calls',
      period: 'day',
      limit: 10,
    });
    expect((await approve(first.sessionId, required)).status).toBe(200);
    await journalUntil(first.sessionId, (events) => count(events, 'done') === 2);
    const rows = await server.db.query<{ calls: number }>(
      'select coalesce(sum(tool_calls), 0)::int as calls from usage where session_id = $1',
      [first.sessionId],
    );
    expect(rows.rows[0]?.calls).toBe(3);
    expect(await budget('acme_calls')).toMatchObject({ used: 3, reserved: 0 });
    await remove('acme_calls');
  });

  it('a run budget holds each turn to its own calls', async () => {
    await put('acme_run_calls', {
      scope: 'agent',
      scope_id: 'counted',
      metric: 'tool_calls',
      period: 'run',
      limit: 1,
    });
    const turn = await admit(twoSums, { agent: 'counted' });
    const waiting = await journalUntil(
      turn.sessionId,
      (events) => count(events, 'input_required') === 1,
    );
    const results = waiting.filter((event) => event.type === 'tool_result');
    expect(results.map((result) => result.ok)).toEqual([true, false]);
    await remove('acme_run_calls');
    const required = waiting.find((event) => event.type === 'input_required');
    expect((await approve(turn.sessionId, required)).status).toBe(200);
    await journalUntil(turn.sessionId, (events) => count(events, 'done') === 1);
  });
});

describe('a wall-time budget', () => {
  it("bills the model calls' and the tool calls' time, and stops a step once no time is left", async () => {
    await put('acme_time', {
      scope: 'agent',
      scope_id: 'timed',
      metric: 'wall_ms',
      period: 'month',
      limit: 10_000_000,
    });
    const first = await admit('/tool fake__nap {}', { agent: 'timed' });
    const done = await journalUntil(first.sessionId, (events) => count(events, 'done') === 1);
    const result = done.find((event) => event.type === 'tool_result');
    expect(result.duration_ms).toBeGreaterThan(0);
    // The call after the tool carries the tool's time.
    const usage = done.filter((event) => event.type === 'usage');
    expect(usage).toHaveLength(2);
    expect(usage[0].tool_ms).toBeUndefined();
    expect(usage[1].tool_ms).toBe(result.duration_ms);
    const billed = usage.reduce((sum, call) => sum + call.latency_ms + (call.tool_ms ?? 0), 0);
    const standing = await budget('acme_time');
    expect(standing).toMatchObject({ used: billed, reserved: 0 });

    // No time left: the next step does not start, a person is asked.
    await put('acme_time', {
      scope: 'agent',
      scope_id: 'timed',
      metric: 'wall_ms',
      period: 'month',
      limit: standing.used,
    });
    const second = await admit('and again', { agent: 'timed', sessionId: first.sessionId });
    const waiting = await journalUntil(
      first.sessionId,
      (events) => count(events, 'input_required') === 1,
    );
    const required = waiting.find((event) => event.type === 'input_required');
    expect(required).toMatchObject({ kind: 'budget_extension', turn_id: second.turnId });
    expect(required.prompt).toContain('"acme_time"');
    expect(
      count(
        waiting.filter((event) => event.turn_id === second.turnId),
        'usage',
      ),
    ).toBe(0);
    await remove('acme_time');
    expect((await approve(first.sessionId, required)).status).toBe(200);
    await journalUntil(first.sessionId, (events) => count(events, 'done') === 2);
  });
});

describe('an execution budget', () => {
  it("covers the execution's session and its threads' sessions", async () => {
    const parent = await admit('hello from the execution');
    const thread = await admit('hello from its thread');
    await journalUntil(parent.sessionId, (events) => count(events, 'done') === 1);
    await journalUntil(thread.sessionId, (events) => count(events, 'done') === 1);
    // Two finished executions (nothing due), the second a fan-out thread of the first.
    for (const [id, sessionId, parentId] of [
      ['ex1', parent.sessionId, null],
      ['ex1.1', thread.sessionId, 'ex1'],
    ] as const) {
      await server.db.query(
        `insert into executions (tenant, execution_id, mission, agent, user_name, session_id,
                                 parent_execution_id, fingerprint, spec, status, max_iterations)
         values ('acme', $1, 'm', 'default', 'ops', $2, $3, 'f', '{}', 'success', 1)`,
        [id, sessionId, parentId],
      );
    }
    const tokens = await server.db.query<{ tokens: number }>(
      `select sum(input_tokens + output_tokens)::float8 as tokens from usage
        where session_id in ($1, $2)`,
      [parent.sessionId, thread.sessionId],
    );
    const used = tokens.rows[0]?.tokens ?? 0;
    expect(used).toBeGreaterThan(0);
    await put('acme_exec', {
      scope: 'execution',
      scope_id: 'ex1',
      metric: 'tokens',
      period: 'day',
      limit: used,
    });
    expect(await budget('acme_exec')).toMatchObject({ used, reserved: 0 });

    // A turn in the thread's session is the execution's: its budget has no room left.
    const next = await admit('one more', { sessionId: thread.sessionId });
    const waiting = await journalUntil(
      thread.sessionId,
      (events) => count(events, 'input_required') === 1,
    );
    const required = waiting.find((event) => event.type === 'input_required');
    expect(required).toMatchObject({ kind: 'budget_extension', turn_id: next.turnId });
    expect(required.prompt).toContain('"acme_exec"');
    await remove('acme_exec');
    expect((await approve(thread.sessionId, required)).status).toBe(200);
    await journalUntil(thread.sessionId, (events) => count(events, 'done') === 2);
  });
});
