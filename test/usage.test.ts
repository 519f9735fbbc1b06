import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyTopic } from '../src/providers/gate.js';
import { costUsd } from '../src/providers/cost.js';
import { createModelRegistry } from '../src/providers/registry.js';
import { countUsage, registry } from '../src/metrics.js';
import { streamStep } from '../src/runtime/modelStep.js';
import { usageRecord } from '../src/runtime/usageRecord.js';
import { recordUsage, type UsageRecord } from '../src/store/recordUsage.js';
import { migrate } from '../src/store/migrate.js';
import { ProviderServer } from './support/providerServer.js';
import { openBeforeMigration } from './support/db.js';
import { fixtureEnv, kindCases, kindConfig } from './support/providerKinds.js';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';

const price = { input: 0.4, output: 1.6, cachedInput: 0.1 };

describe('cost (pure)', () => {
  it('prices fresh input, cached input and output per million tokens', () => {
    expect(costUsd(price, { inputTokens: 1_000_000, outputTokens: 0 })).toBeCloseTo(0.4, 10);
    expect(
      costUsd(price, { inputTokens: 1_000_000, outputTokens: 0, cachedInputTokens: 1_000_000 }),
    ).toBeCloseTo(0.1, 10);
    expect(costUsd(price, { inputTokens: 21, outputTokens: 4, cachedInputTokens: 8 })).toBeCloseTo(
      (13 * 0.4 + 8 * 0.1 + 4 * 1.6) / 1e6,
      15,
    );
    // more cached than input (a provider rounding) never makes the fresh part negative
    expect(costUsd(price, { inputTokens: 5, outputTokens: 0, cachedInputTokens: 9 })).toBeCloseTo(
      (5 * 0.1) / 1e6,
      15,
    );
    expect(costUsd(undefined, { inputTokens: 100, outputTokens: 100 })).toBe(0);
  });
});

let providers: ProviderServer;
let server: TestServer;
beforeAll(async () => {
  providers = await ProviderServer.start();
  server = await startTestServer(
    {
      auth: {
        keys: [
          { key_env: 'ACME_ADMIN', tenant: 'acme', user: 'ops', roles: ['admin'] },
          { key_env: 'ACME_USER', tenant: 'acme', user: 'ann', roles: [] },
          { key_env: 'GLOBEX_ADMIN', tenant: 'globex', user: 'gus', roles: ['admin'] },
          { key_env: 'INITECH_ADMIN', tenant: 'initech', user: 'ida', roles: ['admin'] },
          { key_env: 'INITECH_USER', tenant: 'initech', user: 'ivan', roles: [] },
        ],
      },
    },
    {
      ACME_ADMIN: 'acme-admin-key',
      ACME_USER: 'acme-user-key',
      GLOBEX_ADMIN: 'globex-admin-key',
      INITECH_ADMIN: 'initech-admin-key',
      INITECH_USER: 'initech-user-key',
    },
  );
});
afterAll(async () => {
  await server.close();
  await providers.close();
});

const sink = { push: () => {}, flush: async () => {} };

describe('usage rows from real provider calls, and their attribution', () => {
  it('records each call (reply and gate) and reports totals by model, agent and tenant', async () => {
    const calls: UsageRecord[] = [];
    for (const name of ['openai', 'anthropic']) {
      const kindCase = kindCases.find((candidate) => candidate.kind === name)!;
      providers.on('POST', kindCase.chatPath(kindCase.model), {
        stream: `${kindCase.fixtures}/text.txt`,
      });
      const model = createModelRegistry(kindConfig(kindCase, providers.url), fixtureEnv)(
        'fixture',
        kindCase.model,
      );
      const result = await streamStep(
        model,
        [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }],
        sink,
        new AbortController().signal,
      );
      calls.push(
        usageRecord(
          {
            tenant: 'acme',
            sessionId: 'S1',
            turnId: 't1',
            agent: name === 'openai' ? 'support' : 'sales',
            model: `${name}/${kindCase.model}`,
          },
          result,
          price,
        ),
      );
    }
    const compat = kindCases.find((candidate) => candidate.kind === 'openai_compatible')!;
    providers.on('POST', compat.chatPath(compat.model), { stream: 'openai-chat/gate-verdict.txt' });
    const verdict = await classifyTopic(
      createModelRegistry(kindConfig(compat, providers.url), fixtureEnv)('fixture', compat.model),
      { topic: 'x', input: 'y', timeoutMs: 5000 },
    );
    calls.push(
      usageRecord(
        {
          tenant: 'acme',
          sessionId: 'S1',
          turnId: 't1',
          agent: 'support',
          model: 'gate/nano',
          purpose: 'gate',
        },
        verdict.usage!,
        undefined,
      ),
    );
    calls.push(
      usageRecord(
        {
          tenant: 'globex',
          sessionId: 'S2',
          turnId: null,
          agent: 'support',
          model: 'openai/gpt-4.1-mini',
          outcome: 'cancelled',
        },
        {
          inputTokens: 1000,
          outputTokens: 0,
          cachedInputTokens: 0,
          reasoningTokens: 0,
          latencyMs: 5,
        },
        price,
      ),
    );
    expect(calls[0]).toMatchObject({ inputTokens: 21, cachedInputTokens: 8, outputTokens: 4 });
    expect(calls[0]!.costUsd).toBeCloseTo(12.4e-6, 12);
    await server.db.transaction((tx) => recordUsage(tx, calls));
    await server.db.transaction((tx) => recordUsage(tx, []));

    const asAcme = { authorization: 'Bearer acme-admin-key' };
    const byModel = await request(
      server.url,
      'GET',
      '/api/v1/usage?group_by=model',
      undefined,
      asAcme,
    );
    expect(byModel.status).toBe(200);
    expect(byModel.body.group_by).toBe('model');
    expect(byModel.body.items).toHaveLength(3);
    const openaiRow = byModel.body.items.find((item: any) => item.key === 'openai/gpt-4.1-mini');
    expect(openaiRow).toMatchObject({
      calls: 1,
      input_tokens: 21,
      output_tokens: 4,
      cached_input_tokens: 8,
      reasoning_tokens: 0,
    });
    expect(openaiRow.cost_usd).toBeCloseTo(12.4e-6, 10);
    expect(byModel.body.total).toMatchObject({ calls: 3, input_tokens: 21 + 21 + 90 });

    const byAgent = await request(
      server.url,
      'GET',
      '/api/v1/usage?group_by=agent',
      undefined,
      asAcme,
    );
    expect(byAgent.body.items.map((item: any) => [item.key, item.calls]).sort()).toEqual([
      ['sales', 1],
      ['support', 2],
    ]);
    // an admin sees its own tenant only
    const byTenant = await request(
      server.url,
      'GET',
      '/api/v1/usage?group_by=tenant',
      undefined,
      asAcme,
    );
    expect(byTenant.body.items.map((item: any) => item.key)).toEqual(['acme']);
    const globex = await request(server.url, 'GET', '/api/v1/usage?group_by=tenant', undefined, {
      authorization: 'Bearer globex-admin-key',
    });
    expect(globex.body.items).toEqual([
      expect.objectContaining({ key: 'globex', calls: 1, input_tokens: 1000 }),
    ]);

    // the window: from inclusive, to exclusive
    const future = new Date(Date.now() + 3_600_000).toISOString();
    const later = await request(
      server.url,
      'GET',
      `/api/v1/usage?from=${encodeURIComponent(future)}`,
      undefined,
      asAcme,
    );
    expect(later.body.items).toEqual([]);
    expect(later.body.total.calls).toBe(0);
    const before = await request(
      server.url,
      'GET',
      `/api/v1/usage?to=${encodeURIComponent(future)}`,
      undefined,
      asAcme,
    );
    expect(before.body.total.calls).toBe(3);
  });

  it('refuses non-admins and bad queries with coded errors', async () => {
    const user = await request(server.url, 'GET', '/api/v1/usage', undefined, {
      authorization: 'Bearer acme-user-key',
    });
    expect(user.status).toBe(403);
    expect(user.body.error).toBe('forbidden');
    const asAcme = { authorization: 'Bearer acme-admin-key' };
    for (const query of [
      'group_by=session',
      'group_by=week',
      'from=yesterday',
      'from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z',
      'limit=3',
    ]) {
      const bad = await request(server.url, 'GET', `/api/v1/usage?${query}`, undefined, asAcme);
      expect(bad.status).toBe(400);
      expect(bad.body.error).toBe('invalid_request');
    }
  });
});

describe('usage per user and per day', () => {
  const asIda = { authorization: 'Bearer initech-admin-key' };
  const asIvan = { authorization: 'Bearer initech-user-key' };
  const report = async (query: string) => {
    const answer = await request(server.url, 'GET', `/api/v1/usage?${query}`, undefined, asIda);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    return answer.body;
  };

  /** Admits a turn and waits for its reply; answers the reply's usage from the transcript. */
  async function replied(
    headers: Record<string, string>,
    turnId: string,
    sessionId?: string,
  ): Promise<{ sessionId: string; input_tokens: number; output_tokens: number }> {
    const admitted = await request(
      server.url,
      'POST',
      '/api/v1/chat/turns',
      {
        turn_id: turnId,
        message: `hello from ${turnId}`,
        ...(sessionId ? { session_id: sessionId } : {}),
      },
      headers,
    );
    expect(admitted.status).toBe(202);
    const session = admitted.body.session_id as string;
    const reply = await until(
      async () =>
        (
          await request(
            server.url,
            'GET',
            `/api/v1/chat/sessions/${session}/messages`,
            undefined,
            asIda,
          )
        ).body.items?.find((item: any) => item.role === 'assistant' && item.turn_id === turnId),
      (found) => found !== undefined,
      `the reply to ${turnId}`,
    );
    return { sessionId: session, ...reply.usage };
  }

  it('groups by the user each call was for, and by UTC day, with the same window', async () => {
    const started = new Date();
    // Ivan starts a conversation; Ida (an admin) writes in it: her turn's call is hers,
    // although the session is Ivan's.
    const first = await replied(asIvan, 'initech_t1');
    const second = await replied(asIda, 'initech_t2', first.sessionId);
    expect(first.input_tokens).toBeGreaterThan(0);
    expect(second.input_tokens).toBeGreaterThan(0);
    // Calls billed outside the reply's commit (as an execution's evaluation is), at known
    // times: of a turn (its author), of no turn (the session's owner), of no known session.
    const billed = (
      model: string,
      sessionId: string,
      turnId: string | null,
      tokens: number,
      cost: number,
    ): UsageRecord => ({
      tenant: 'initech',
      sessionId,
      turnId,
      agent: 'default',
      model,
      purpose: 'evaluation',
      outcome: 'ok',
      inputTokens: tokens,
      outputTokens: tokens / 10,
      cachedInputTokens: 0,
      reasoningTokens: 0,
      costUsd: cost,
      latencyMs: 1,
      ttftMs: null,
    });
    await server.db.transaction((tx) =>
      recordUsage(tx, [
        billed('test/a', first.sessionId, 'initech_t1', 100, 0.5),
        billed('test/b', first.sessionId, null, 200, 0.25),
        billed('test/c', 'sess_gone', null, 300, 1),
        billed('test/d', first.sessionId, 'initech_t2', 400, 2),
      ]),
    );
    // Their times, either side of UTC midnights (a leap day among them).
    for (const [model, at] of [
      ['test/a', '2020-02-28T23:30:00Z'],
      ['test/b', '2020-02-29T00:10:00Z'],
      ['test/c', '2020-02-29T12:00:00Z'],
      ['test/d', '2020-03-01T00:00:00Z'],
    ]) {
      await server.db.query(`update usage set at = $2 where tenant = 'initech' and model = $1`, [
        model,
        at,
      ]);
    }

    const byUser = await report('group_by=user');
    expect(byUser.group_by).toBe('user');
    // Most expensive first (the demo model costs nothing); null: no user known.
    expect(byUser.items).toEqual([
      {
        key: 'ida',
        calls: 2,
        input_tokens: second.input_tokens + 400,
        output_tokens: second.output_tokens + 40,
        cached_input_tokens: 0,
        reasoning_tokens: 0,
        cost_usd: 2,
      },
      {
        key: null,
        calls: 1,
        input_tokens: 300,
        output_tokens: 30,
        cached_input_tokens: 0,
        reasoning_tokens: 0,
        cost_usd: 1,
      },
      {
        key: 'ivan',
        calls: 3,
        input_tokens: first.input_tokens + 300,
        output_tokens: first.output_tokens + 30,
        cached_input_tokens: 0,
        reasoning_tokens: 0,
        cost_usd: 0.75,
      },
    ]);
    expect(byUser.total).toMatchObject({
      calls: 6,
      input_tokens: first.input_tokens + second.input_tokens + 1000,
      cost_usd: 3.75,
    });

    // Days: oldest first, only days with usage; `to` is exclusive.
    const winter = 'from=2020-01-01T00:00:00Z&to=2020-03-01T00:00:00Z';
    const byDay = await report(`group_by=day&${winter}`);
    expect(byDay).toMatchObject({
      group_by: 'day',
      from: '2020-01-01T00:00:00.000Z',
      to: '2020-03-01T00:00:00.000Z',
    });
    expect(byDay.items).toEqual([
      {
        key: '2020-02-28',
        calls: 1,
        input_tokens: 100,
        output_tokens: 10,
        cached_input_tokens: 0,
        reasoning_tokens: 0,
        cost_usd: 0.5,
      },
      {
        key: '2020-02-29',
        calls: 2,
        input_tokens: 500,
        output_tokens: 50,
        cached_input_tokens: 0,
        reasoning_tokens: 0,
        cost_usd: 1.25,
      },
    ]);
    expect(byDay.total).toMatchObject({ calls: 3, input_tokens: 600, cost_usd: 1.75 });
    const keysOf = (body: any) => body.items.map((item: any) => [item.key, item.calls]);
    // A day is the UTC date, whatever offset the window is given in.
    expect(
      keysOf(
        await report(
          `group_by=day&from=${encodeURIComponent('2020-02-29T01:00:00+01:00')}&to=2020-03-02T00:00:00Z`,
        ),
      ),
    ).toEqual([
      ['2020-02-29', 2],
      ['2020-03-01', 1],
    ]);
    // A day the window cuts counts its part inside it.
    expect(
      keysOf(await report('group_by=day&from=2020-02-29T06:00:00Z&to=2020-03-01T00:00:00Z')),
    ).toEqual([['2020-02-29', 1]]);
    // The same window per user.
    expect(keysOf(await report(`group_by=user&${winter}`))).toEqual([
      [null, 1],
      ['ivan', 2],
    ]);
    // The replies' calls are on the UTC day (or days, around midnight) they were made.
    const days = [started, new Date()].map((time) => time.toISOString().slice(0, 10));
    const recent = await report(`group_by=day&from=${encodeURIComponent(started.toISOString())}`);
    expect(recent.items.length).toBeGreaterThan(0);
    for (const item of recent.items) expect(days).toContain(item.key);
    expect(recent.total.calls).toBe(2);

    // Admin only, the same as the other groupings; another tenant sees none of it.
    for (const group of ['user', 'day']) {
      const refused = await request(
        server.url,
        'GET',
        `/api/v1/usage?group_by=${group}`,
        undefined,
        asIvan,
      );
      expect(refused.status).toBe(403);
      expect(refused.body.error).toBe('forbidden');
      const other = await request(server.url, 'GET', `/api/v1/usage?group_by=${group}`, undefined, {
        authorization: 'Bearer globex-admin-key',
      });
      expect(JSON.stringify(other.body.items)).not.toMatch(/ivan|ida|2020-0/);
    }
  });
});

describe('migration 0082: the user of usage rows written before it', () => {
  it('is the turn’s author, else the session’s owner, else null', async () => {
    // Every migration but 0082 first: the database as the previous version left it.
    const { db, close } = await openBeforeMigration(82);
    try {
      await db.query(`insert into sessions (session_id, tenant, agent, owner)
                      values ('s1', 'acme', 'default', 'olga'), ('s2', 'acme', 'default', null)`);
      await db.query(`insert into messages (message_id, tenant, session_id, turn_id, role, author,
                                            content, sequence)
                      values ('m1', 'acme', 's1', 't1', 'user', 'pat', 'hi', 1),
                             ('m2', 'acme', 's1', 't1', 'assistant', 'default', 'hello', 2)`);
      await db.query(`insert into usage (tenant, session_id, turn_id, agent, model)
                      values ('acme', 's1', 't1', 'default', 'm/turn'),
                             ('acme', 's1', null, 'default', 'm/owner'),
                             ('acme', 's2', null, 'default', 'm/nobody'),
                             ('acme', 'gone', 't9', 'default', 'm/gone')`);

      expect(await migrate(db)).toEqual(['0082_usage_user.sql']);
      const rows = await db.query<{ model: string; user_name: string | null }>(
        'select model, user_name from usage order by model',
      );
      expect(rows.rows).toEqual([
        { model: 'm/gone', user_name: null },
        { model: 'm/nobody', user_name: null },
        { model: 'm/owner', user_name: 'olga' },
        { model: 'm/turn', user_name: 'pat' },
      ]);
    } finally {
      await close();
    }
  });
});

describe('Prometheus counters', () => {
  it('counts tokens by kind and cost per tenant, agent and model', async () => {
    countUsage({
      tenant: 'acme',
      agent: 'metrics-agent',
      model: 'openai/gpt-4.1-mini',
      inputTokens: 21,
      outputTokens: 4,
      cachedInputTokens: 8,
      reasoningTokens: 2,
      costUsd: 0.5,
    });
    const text = await registry.metrics();
    const labels = 'tenant="acme",agent="metrics-agent",model="openai/gpt-4.1-mini"';
    expect(text).toContain(`parley_tokens_total{${labels},kind="input"} 21`);
    expect(text).toContain(`parley_tokens_total{${labels},kind="output"} 4`);
    expect(text).toContain(`parley_tokens_total{${labels},kind="cached_input"} 8`);
    expect(text).toContain(`parley_tokens_total{${labels},kind="reasoning"} 2`);
    expect(text).toContain(`parley_cost_usd_total{${labels}} 0.5`);
  });
});
