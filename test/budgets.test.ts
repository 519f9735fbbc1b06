import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileConfig } from '../src/config/load.js';
import { readEvents } from '../src/store/readEvents.js';
import { checkJournalInvariants } from './support/invariants.js';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// Spending budgets (docs/governance.md, "Budgets that are enforced"), on the engine the
// suite runs on: the admin API, the reservation before each model call and its
// settlement with the call's usage, and a breach as a `budget_extension` request.

const admin = { authorization: 'Bearer acme-admin-key' };
const member = { authorization: 'Bearer acme-member-key' };
const globex = { authorization: 'Bearer globex-admin-key' };
// USD per million tokens: a token costs 0.001, and a call of the `capped` agent may write
// at most 100 tokens, so its worst case is at least 0.1.
const price = { input: 1000, output: 1000 };

let server: TestServer;
let counter = 0;
beforeAll(async () => {
  server = await startTestServer(
    {
      auth: {
        keys: [
          { key_env: 'ACME_ADMIN', tenant: 'acme', user: 'ops', roles: ['admin'] },
          { key_env: 'ACME_MEMBER', tenant: 'acme', user: 'ann', roles: [] },
          { key_env: 'GLOBEX_ADMIN', tenant: 'globex', user: 'gus', roles: ['admin'] },
          { key_env: 'OPERATOR', tenant: 'ops', user: 'root', roles: [], operator: true },
        ],
      },
      pricing: { 'demo/echo': price },
      agents: {
        default: { model: 'demo/echo' },
        capped: { model: 'demo/echo', max_output_tokens: 100 },
        strict: {
          model: 'demo/echo',
          max_output_tokens: 100,
          budgets: { max_iterations: 8, max_tool_calls: 16, on_exhausted: 'finish' },
        },
      },
      budgets: {
        seeded: { tenant: 'globex', metric: 'tokens', period: 'month', limit: 1_000_000 },
      },
    },
    {
      ACME_ADMIN: 'acme-admin-key',
      ACME_MEMBER: 'acme-member-key',
      GLOBEX_ADMIN: 'globex-admin-key',
      OPERATOR: 'operator-key',
    },
  );
});
afterAll(async () => {
  if (server) {
    await checkJournalInvariants(server.db);
    await server.close();
  }
});

const count = (events: any[], type: string) => events.filter((event) => event.type === type).length;

async function journalUntil(sessionId: string, done: (events: any[]) => boolean): Promise<any[]> {
  return until(
    () => readEvents(server.db, sessionId, 0, 100_000) as Promise<any[]>,
    done,
    `the journal of ${sessionId}`,
  );
}

async function admit(
  message: string,
  options: { sessionId?: string; agent?: string; who?: Record<string, string> } = {},
) {
  const turnId = `bt_${counter++}`;
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
    options.who ?? admin,
  );
  expect(response.status).toBe(202);
  return { sessionId: response.body.session_id as string, turnId };
}

const put = (id: string, body: unknown, who = admin) =>
  request(server.url, 'PUT', `/api/v1/budgets/${id}`, body, who);

async function budget(id: string, who = admin): Promise<any> {
  const listed = await request(server.url, 'GET', '/api/v1/budgets', undefined, who);
  expect(listed.status).toBe(200);
  return listed.body.items.find((item: any) => item.budget_id === id);
}

async function usageCost(sessionId: string): Promise<number> {
  const rows = await server.db.query<{ cost: number }>(
    'select coalesce(sum(cost_usd), 0)::float8 as cost from usage where session_id = $1',
    [sessionId],
  );
  return rows.rows[0]?.cost ?? 0;
}

async function reservations(sessionId: string): Promise<number> {
  const rows = await server.db.query('select 1 from budget_reservations where session_id = $1', [
    sessionId,
  ]);
  return rows.rowCount;
}

describe('spending budgets: the admin API', () => {
  it('a tenant admin creates, edits and deletes a budget; a member may not (403)', async () => {
    const created = await put('api_daily', { metric: 'cost_usd', period: 'day', limit: 5 });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({
      budget_id: 'api_daily',
      scope: 'tenant',
      scope_id: null,
      metric: 'cost_usd',
      period: 'day',
      limit: 5,
      reserved: 0,
      origin: 'api',
      updated_by: 'ops',
    });
    expect(typeof created.body.used).toBe('number');
    const edited = await put('api_daily', {
      scope: 'agent',
      scope_id: 'capped',
      metric: 'tokens',
      period: 'month',
      limit: 1_000_000,
    });
    expect(edited.body).toMatchObject({ scope: 'agent', scope_id: 'capped', limit: 1_000_000 });

    for (const attempt of [
      put('api_daily', { metric: 'cost_usd', period: 'day', limit: 0 }, member),
      request(server.url, 'GET', '/api/v1/budgets', undefined, member),
      request(server.url, 'DELETE', '/api/v1/budgets/api_daily', undefined, member),
    ]) {
      const refused = await attempt;
      expect(refused.status).toBe(403);
      expect(refused.body.error).toBe('forbidden');
    }
    expect(await budget('api_daily')).toMatchObject({ limit: 1_000_000 });
    // Another tenant's budget is not there for globex's admin.
    expect(await budget('api_daily', globex)).toBeUndefined();
    const foreign = await request(
      server.url,
      'DELETE',
      '/api/v1/budgets/api_daily',
      undefined,
      globex,
    );
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toBe('budget_not_found');

    const deleted = await request(
      server.url,
      'DELETE',
      '/api/v1/budgets/api_daily',
      undefined,
      admin,
    );
    expect(deleted.body).toEqual({ budget_id: 'api_daily', deleted: true });
    expect(await budget('api_daily')).toBeUndefined();
  });

  it('bad input is a coded 400 and writes nothing', async () => {
    const bad: [string, unknown][] = [
      ['b1', { metric: 'cost_usd', period: 'day', limit: -1 }],
      ['b2', { metric: 'dollars', period: 'day', limit: 1 }],
      ['b3', { metric: 'cost_usd', period: 'week', limit: 1 }],
      ['b4', { scope: 'agent', metric: 'cost_usd', period: 'day', limit: 1 }],
      ['b5', { scope: 'tenant', scope_id: 'x', metric: 'cost_usd', period: 'day', limit: 1 }],
      ['b6', { metric: 'cost_usd', period: 'day', limit: 1, tenant: 'globex' }],
      ['b7', { metric: 'cost_usd', period: 'day' }],
      ['bad id!', { metric: 'cost_usd', period: 'day', limit: 1 }],
    ];
    for (const [id, body] of bad) {
      const refused = await put(encodeURIComponent(id), body);
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(refused.body.error).toBe('invalid_request');
    }
    const listed = await request(server.url, 'GET', '/api/v1/budgets', undefined, admin);
    expect(listed.body.items.map((item: any) => item.budget_id)).not.toEqual(
      expect.arrayContaining(['b1', 'b2', 'b3', 'b4', 'b5', 'b6', 'b7', 'bad id!']),
    );
    const rows = await server.db.query(
      `select 1 from budgets where budget_id in ('b1','b2','b3','b4','b5','b6','b7','bad id!')`,
    );
    expect(rows.rowCount).toBe(0);
  });

  it("seeds the operator's budgets from the configuration", async () => {
    expect(await budget('seeded', globex)).toMatchObject({
      scope: 'tenant',
      metric: 'tokens',
      period: 'month',
      limit: 1_000_000,
      origin: 'config',
      updated_by: null,
    });
  });

  it('refuses an invalid budget in the configuration, naming the key', () => {
    expect(() =>
      compileConfig({
        budgets: {
          team: { tenant: 'acme', scope: 'agent', metric: 'tokens', period: 'day', limit: 1 },
        },
      }),
    ).toThrow(/budgets\.team\.scope_id/);
    expect(() =>
      compileConfig({
        budgets: { team: { tenant: 'acme', metric: 'tokens', period: 'week', limit: 1 } },
      }),
    ).toThrow(/budgets\.team\.period/);
  });
});

describe('spending budgets: reserve before each model call, settle after', () => {
  it('a tenant cost budget stops the second turn before its model call; raising it and approving resumes it', async () => {
    expect(
      (await put('acme_cost', { metric: 'cost_usd', period: 'day', limit: 1000 })).status,
    ).toBe(200);
    const first = await admit('hello there', { agent: 'capped' });
    await journalUntil(first.sessionId, (events) => count(events, 'done') === 1);
    const afterFirst = await budget('acme_cost');
    expect(afterFirst.used).toBeGreaterThan(0);
    expect(afterFirst.reserved).toBe(0);
    expect(await reservations(first.sessionId)).toBe(0);

    // Room for less than one worst case (at least 0.1): the next call may not start.
    await put('acme_cost', { metric: 'cost_usd', period: 'day', limit: afterFirst.used + 0.05 });
    const second = await admit('and again', { agent: 'capped', sessionId: first.sessionId });
    const waiting = await journalUntil(
      first.sessionId,
      (events) => count(events, 'input_required') === 1,
    );
    const required = waiting.find((event) => event.type === 'input_required');
    expect(required).toMatchObject({ kind: 'budget_extension', turn_id: second.turnId });
    expect(required.prompt).toContain('"acme_cost"');
    // The model was not called: no text and no usage for the second turn.
    const ofSecond = waiting.filter((event) => event.turn_id === second.turnId);
    expect(count(ofSecond, 'text_delta')).toBe(0);
    expect(count(ofSecond, 'usage')).toBe(0);
    expect((await budget('acme_cost')).used).toBeCloseTo(afterFirst.used, 8);

    // The request goes to whoever may raise the budget: a tenant admin.
    const inbox = async (who: Record<string, string>) =>
      (
        await request(server.url, 'GET', '/api/v1/inputs?state=pending', undefined, who)
      ).body.items.map((item: any) => item.request_id);
    expect(await inbox(admin)).toContain(required.request_id);
    expect(await inbox(member)).not.toContain(required.request_id);
    const byMember = await request(
      server.url,
      'POST',
      `/api/v1/chat/sessions/${first.sessionId}/inputs/${required.request_id}`,
      { expected_sequence: required.sequence, approved: true },
      member,
    );
    expect(byMember.status).toBe(403);
    expect(byMember.body.error).toBe('forbidden');

    await put('acme_cost', { metric: 'cost_usd', period: 'day', limit: 1000 });
    const answered = await request(
      server.url,
      'POST',
      `/api/v1/chat/sessions/${first.sessionId}/inputs/${required.request_id}`,
      { expected_sequence: required.sequence, approved: true },
      admin,
    );
    expect(answered.status).toBe(200);
    const done = await journalUntil(first.sessionId, (events) => count(events, 'done') === 2);
    expect(done.filter((event) => event.type === 'done').at(-1)).toMatchObject({
      turn_id: second.turnId,
      final_message: { content: 'You said: and again' },
    });
    const settled = await budget('acme_cost');
    expect(settled.used).toBeCloseTo(await usageCost(first.sessionId), 8);
    expect(settled.used).toBeGreaterThan(afterFirst.used);
    expect(settled.reserved).toBe(0);
    await request(server.url, 'DELETE', '/api/v1/budgets/acme_cost', undefined, admin);
  });

  it('a refused extension ends the turn with budget_exhausted; an agent that may not ask ends it at once', async () => {
    await put('acme_none', {
      scope: 'user',
      scope_id: 'ops',
      metric: 'tokens',
      period: 'run',
      limit: 10,
    });
    const asked = await admit('stop me', { agent: 'capped' });
    const waiting = await journalUntil(
      asked.sessionId,
      (events) => count(events, 'input_required') === 1,
    );
    const required = waiting.find((event) => event.type === 'input_required');
    expect(required.prompt).toContain('"acme_none"');
    const refused = await request(
      server.url,
      'POST',
      `/api/v1/chat/sessions/${asked.sessionId}/inputs/${required.request_id}`,
      { expected_sequence: required.sequence, approved: false },
      admin,
    );
    expect(refused.status).toBe(200);
    const ended = await journalUntil(asked.sessionId, (events) => count(events, 'error') === 1);
    expect(ended.find((event) => event.type === 'error')).toMatchObject({
      code: 'budget_exhausted',
      turn_ids: [asked.turnId],
    });
    expect(count(ended, 'done')).toBe(0);

    const finished = await admit('stop me now', { agent: 'strict' });
    const events = await journalUntil(finished.sessionId, (list) => count(list, 'error') === 1);
    expect(events.find((event) => event.type === 'error')).toMatchObject({
      code: 'budget_exhausted',
    });
    expect(count(events, 'input_required')).toBe(0);
    expect(count(events, 'usage')).toBe(0);

    // Another user's turns are not in the budget's scope.
    const other = await admit('not mine', { agent: 'capped', who: member });
    await journalUntil(other.sessionId, (list) => count(list, 'done') === 1);
    await request(server.url, 'DELETE', '/api/v1/budgets/acme_none', undefined, admin);
  });

  it('GET shows a call in flight as reserved; a cancel bills it once and releases it', async () => {
    await put('acme_agent', {
      scope: 'agent',
      scope_id: 'capped',
      metric: 'cost_usd',
      period: 'month',
      limit: 1000,
    });
    // `/stall` keeps the demo model's call open until it is aborted.
    const stalled = await admit('/stall a long wait', { agent: 'capped' });
    const before = await until(
      () => budget('acme_agent'),
      (found) => found.reserved > 0,
      'the call in flight reserved',
    );
    // At least the most output the call may write (100 tokens at 0.001).
    expect(before.reserved).toBeGreaterThanOrEqual(0.1);
    const cancelled = await request(
      server.url,
      'POST',
      `/api/v1/chat/sessions/${stalled.sessionId}/turns/${stalled.turnId}/cancel`,
      { command_id: `cmd_${stalled.turnId}` },
      admin,
    );
    expect(cancelled.status).toBeLessThan(300);
    const events = await journalUntil(stalled.sessionId, (list) => count(list, 'cancelled') === 1);
    expect(count(events, 'usage')).toBe(1);
    const after = await budget('acme_agent');
    expect(after.reserved).toBe(0);
    expect(await reservations(stalled.sessionId)).toBe(0);
    expect(after.used - before.used).toBeCloseTo(await usageCost(stalled.sessionId), 8);
    await request(server.url, 'DELETE', '/api/v1/budgets/acme_agent', undefined, admin);
  });

  it('reports reservations and breaches on /metrics', async () => {
    const metrics = await request(server.url, 'GET', '/metrics', undefined, {
      authorization: 'Bearer operator-key',
    });
    expect(metrics.status).toBe(200);
    expect(String(metrics.body)).toMatch(/parley_budget_breaches_total\{tenant="acme"/);
    expect(String(metrics.body)).toContain('# TYPE parley_budget_reserved gauge');
  });
});
