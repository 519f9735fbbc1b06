import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyTopic } from '../src/providers/gate.js';
import { costUsd } from '../src/providers/cost.js';
import { createModelRegistry } from '../src/providers/registry.js';
import { countUsage, registry } from '../src/metrics.js';
import { streamStep } from '../src/runtime/modelStep.js';
import { usageRecord } from '../src/runtime/usageRecord.js';
import { recordUsage, type UsageRecord } from '../src/store/recordUsage.js';
import { ProviderServer } from './support/providerServer.js';
import { fixtureEnv, kindCases, kindConfig } from './support/providerKinds.js';
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
        ],
      },
    },
    { ACME_ADMIN: 'acme-admin-key', ACME_USER: 'acme-user-key', GLOBEX_ADMIN: 'globex-admin-key' },
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
