import { spawn } from 'node:child_process';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { checkAgentModels } from '../src/catalog/check.js';
import { syncCatalog } from '../src/catalog/sync.js';
import { compileConfig } from '../src/config/load.js';
import type { Db } from '../src/store/db.js';
import { listModels } from '../src/store/listModels.js';
import { openTestDb } from './support/db.js';
import { ProviderServer } from './support/providerServer.js';
import { fixtureEnv, providerKey } from './support/providerKinds.js';
import { request, startTestServer } from './support/server.js';

/** The model catalog against the fixture servers, on the engine under test. */
let server: ProviderServer;
let db: Db;
let closeDb: () => Promise<void>;

// One database for the file (PGlite start-up is slow); each test starts from an empty catalog.
beforeAll(async () => {
  server = await ProviderServer.start();
  ({ db, close: closeDb } = await openTestDb());
});
afterAll(async () => {
  await server.close();
  await closeDb();
});
beforeEach(async () => {
  server.reset();
  await db.query('delete from models');
});

function config(extra: Record<string, unknown> = {}) {
  const url = server.url;
  return compileConfig(
    {
      providers: {
        demo: { kind: 'demo' },
        openai: { kind: 'openai', api_key_env: 'TEST_PROVIDER_KEY', base_url: `${url}/v1` },
        claude: { kind: 'anthropic', api_key_env: 'TEST_PROVIDER_KEY', base_url: `${url}/v1` },
        gemini: { kind: 'google', api_key_env: 'TEST_PROVIDER_KEY', base_url: `${url}/v1beta` },
        local: { kind: 'ollama', base_url: url },
        vllm: { kind: 'openai_compatible', base_url: `${url}/compat/v1` },
      },
      ...extra,
    },
    fixtureEnv,
  );
}

describe('model catalog sync', () => {
  it('marks a model that vanished between two syncs removed, not deleted; it comes back if listed again', async () => {
    const openaiConfig = config();
    server.on('GET', '/v1/models', { json: 'openai/models-1.json' });
    const [first] = await syncCatalog({ db, config: openaiConfig, env: fixtureEnv }, 'openai');
    expect(first).toMatchObject({ provider: 'openai', ok: true, removed: [], active: 4 });
    expect(first!.added.sort()).toEqual([
      'gpt-4.1',
      'gpt-4.1-mini',
      'gpt-5-mini',
      'text-embedding-3-small',
    ]);
    expect(server.requests[0]!.headers.authorization).toBe(`Bearer ${providerKey}`);
    const before = await listModels(db, { provider: 'openai' });

    server.on('GET', '/v1/models', { json: 'openai/models-2.json' });
    const [second] = await syncCatalog({ db, config: openaiConfig, env: fixtureEnv }, 'openai');
    expect(second).toMatchObject({ ok: true, added: ['gpt-5'], removed: ['gpt-4.1'], active: 4 });
    const all = await listModels(db, { provider: 'openai', includeRemoved: true });
    const vanished = all.find((model) => model.model_id === 'gpt-4.1')!;
    expect(vanished).toMatchObject({ status: 'removed' });
    expect(vanished.removed_at).toBeInstanceOf(Date);
    expect((await listModels(db, { provider: 'openai' })).map((model) => model.model_id)).toEqual([
      'gpt-4.1-mini',
      'gpt-5',
      'gpt-5-mini',
      'text-embedding-3-small',
    ]);
    const mini = all.find((model) => model.model_id === 'gpt-4.1-mini')!;
    expect(mini.first_seen_at).toEqual(
      before.find((model) => model.model_id === 'gpt-4.1-mini')!.first_seen_at,
    );
    // the shipped table fills what OpenAI's list does not say
    expect(mini).toMatchObject({
      tools: true,
      vision: true,
      reasoning: false,
      context_window: 1_047_576,
      source: 'listing',
    });
    expect(all.find((model) => model.model_id === 'text-embedding-3-small')).toMatchObject({
      tools: null,
      vision: null,
    });

    server.on('GET', '/v1/models', { json: 'openai/models-1.json' });
    const [third] = await syncCatalog({ db, config: openaiConfig, env: fixtureEnv }, 'openai');
    expect(third).toMatchObject({ added: [], removed: ['gpt-5'] });
    const back = (await listModels(db, { provider: 'openai' })).find(
      (model) => model.model_id === 'gpt-4.1',
    )!;
    expect(back).toMatchObject({ status: 'active', removed_at: null });
    expect(back.first_seen_at).toEqual(vanished.first_seen_at);
  });

  it('reads each kind: Anthropic pages, Gemini limits, Ollama capabilities, vLLM context, overrides last', async () => {
    server
      .on(
        'GET',
        '/v1/models',
        { json: 'anthropic/models-page-1.json' },
        { json: 'anthropic/models-page-2.json' },
      )
      .on('GET', '/v1beta/models', { json: 'google/models.json' })
      .on('GET', '/api/tags', { json: 'ollama/tags.json' })
      .on(
        'POST',
        '/api/show',
        { json: 'ollama/show-qwen3.json' },
        { json: 'ollama/show-llava.json' },
      )
      .on('GET', '/compat/v1/models', { json: 'openai-chat/models-vllm.json' });
    const withOverrides = config({
      models: {
        'local/llava:7b': { context_window: 8192 },
        'vllm/my-gateway-model': { tools: true, context_window: 16000 },
      },
    });
    for (const provider of ['claude', 'gemini', 'local', 'vllm', 'demo']) {
      const [report] = await syncCatalog({ db, config: withOverrides, env: fixtureEnv }, provider);
      expect(report).toMatchObject({ provider, ok: true });
    }
    const byName = new Map(
      (await listModels(db)).map((model) => [`${model.provider}/${model.model_id}`, model]),
    );
    expect(byName.get('claude/claude-sonnet-4-5-20250929')).toMatchObject({
      display_name: 'Claude Sonnet 4.5',
      tools: true,
      reasoning: true,
      context_window: 200_000,
    });
    expect(byName.has('claude/claude-haiku-4-5-20251001')).toBe(true);
    const anthropicPages = server.requests.filter((sent) => sent.path === '/v1/models');
    expect(anthropicPages[0]!.headers['x-api-key']).toBe(providerKey);
    expect(anthropicPages[1]!.query.get('after_id')).toBe('claude-sonnet-4-5-20250929');
    expect(byName.get('gemini/gemini-2.5-flash')).toMatchObject({
      context_window: 1_048_576,
      max_output_tokens: 65_536,
      reasoning: true,
      vision: true,
    });
    expect(byName.has('gemini/text-embedding-004')).toBe(false);
    expect(byName.get('local/qwen3:8b')).toMatchObject({
      tools: true,
      vision: false,
      reasoning: true,
      context_window: 40960,
    });
    expect(byName.get('local/llava:7b')).toMatchObject({
      tools: false,
      vision: true,
      context_window: 8192,
    });
    expect(byName.get('vllm/Qwen/Qwen3-8B')).toMatchObject({
      tools: true,
      reasoning: true,
      context_window: 32768,
    });
    expect(byName.get('vllm/my-gateway-model')).toMatchObject({
      source: 'config',
      tools: true,
      context_window: 16000,
    });
    expect(byName.get('demo/vision')).toMatchObject({ vision: true });
  });

  it('leaves the rows of a provider whose list fails untouched, and reports why without its body', async () => {
    server.on('GET', '/v1/models', { json: 'openai/models-1.json' });
    await syncCatalog({ db, config: config(), env: fixtureEnv }, 'openai');
    server.on('GET', '/v1/models', {
      status: 401,
      json: { error: { message: 'BODY-SECRET-detail' } },
    });
    const [failed] = await syncCatalog({ db, config: config(), env: fixtureEnv }, 'openai');
    expect(failed).toMatchObject({ ok: false, added: [], removed: [] });
    expect(failed!.error).toBe('provider "openai": the model list request answered HTTP 401');
    expect((await listModels(db, { provider: 'openai' })).length).toBe(4);
    // a missing key is reported by its variable's name
    const [noKey] = await syncCatalog({ db, config: config(), env: {} }, 'openai');
    expect(noKey!.error).toContain('TEST_PROVIDER_KEY');
    await expect(syncCatalog({ db, config: config() }, 'ghost')).rejects.toThrow('ghost');
  });
});

describe('agents checked against the catalog', () => {
  it('reports unknown and removed models, and missing tools or vision', async () => {
    server.on('GET', '/api/tags', { json: 'ollama/tags.json' });
    server.on(
      'POST',
      '/api/show',
      { json: 'ollama/show-qwen3.json' },
      { json: 'ollama/show-llava.json' },
    );
    const checked = config({
      agents: {
        fine: { model: 'local/qwen3:8b', tools: { clock: 'allow' } },
        blind: { model: 'local/qwen3:8b', vision: 'always' },
        toolless: { model: 'local/llava:7b', tools: { clock: 'approve' } },
        denyOnly: { model: 'local/llava:7b', tools: { clock: 'deny' } },
        ghost: { model: 'local/nothing:1b', gate: { model: 'local/llava:7b', topic: 't' } },
      },
    });
    await syncCatalog({ db, config: checked, env: fixtureEnv }, 'local');
    const problems = checkAgentModels(checked, await listModels(db, { includeRemoved: true }));
    expect(problems.map((problem) => [problem.agent, problem.problem])).toEqual([
      ['blind', 'no_vision'],
      ['toolless', 'no_tools'],
      ['ghost', 'unknown_model'],
      ['ghost', 'no_tools'],
    ]);
    expect(problems[2]!.message).toBe(
      'agent "ghost": its model local/nothing:1b is not in the model catalog',
    );
  });

  it('fails start-up with catalog.strict, and only warns without it', async () => {
    const agents = { default: { model: 'demo/unlisted' } };
    await expect(startTestServer({ agents, catalog: { strict: true } })).rejects.toThrow(
      /catalog\.strict.*demo\/unlisted is not in the model catalog/s,
    );
    const lenient = await startTestServer({ agents });
    try {
      expect(lenient.catalogProblems.map((problem) => problem.problem)).toEqual(['unknown_model']);
    } finally {
      await lenient.close();
    }
  });
});

function parley(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['dist/cli/main.js', ...args], {
      env: { ...process.env, PARLEY_CONFIG: '', DATABASE_URL: '', PARLEY_API_KEY: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('catalog API and parley models', () => {
  it('syncs at start, lists models, syncs on demand (admin only) through the API and the CLI', async () => {
    server.on('GET', '/v1/models', { json: 'openai/models-1.json' });
    const parleyServer = await startTestServer(
      {
        providers: {
          demo: { kind: 'demo' },
          openai: {
            kind: 'openai',
            api_key_env: 'TEST_PROVIDER_KEY',
            base_url: `${server.url}/v1`,
          },
        },
        auth: {
          keys: [
            // The catalog is deployment-wide: its sync is the operator's.
            {
              key_env: 'ADMIN_KEY',
              tenant: 'acme',
              user: 'ops',
              roles: ['admin'],
              operator: true,
            },
            { key_env: 'USER_KEY', tenant: 'acme', user: 'ann', roles: ['admin'] },
          ],
        },
      },
      { ...fixtureEnv, ADMIN_KEY: 'admin-key-123', USER_KEY: 'user-key-456' },
    );
    try {
      const asUser = { authorization: 'Bearer user-key-456' };
      const asAdmin = { authorization: 'Bearer admin-key-123' };
      const listed = await request(parleyServer.url, 'GET', '/api/v1/models', undefined, asUser);
      expect(listed.status).toBe(200);
      expect(listed.body.items.map((item: any) => item.model)).toContain('openai/gpt-4.1');
      expect(listed.body.items.find((item: any) => item.model === 'demo/echo')).toMatchObject({
        provider: 'demo',
        model_id: 'echo',
        status: 'active',
        capabilities: { tools: true, vision: false },
      });

      const forbidden = await request(
        parleyServer.url,
        'POST',
        '/api/v1/admin/models/sync',
        {},
        asUser,
      );
      expect(forbidden.status).toBe(403);
      const unknown = await request(
        parleyServer.url,
        'POST',
        '/api/v1/admin/models/sync',
        { provider: 'nope' },
        asAdmin,
      );
      expect(unknown.status).toBe(400);
      expect(unknown.body.error).toBe('invalid_request');

      server.on('GET', '/v1/models', { json: 'openai/models-2.json' });
      const cliSync = await parley([
        'models',
        'sync',
        'openai',
        '--url',
        parleyServer.url,
        '--key',
        'admin-key-123',
      ]);
      expect(cliSync.stderr).toBe('');
      expect(cliSync.code).toBe(0);
      expect(cliSync.stdout).toBe('openai: 4 models (1 new, 1 removed)\n');

      const removed = await request(
        parleyServer.url,
        'GET',
        '/api/v1/models?provider=openai&include_removed=true',
        undefined,
        asUser,
      );
      expect(removed.body.items.find((item: any) => item.model_id === 'gpt-4.1').status).toBe(
        'removed',
      );
      const bad = await request(
        parleyServer.url,
        'GET',
        '/api/v1/models?sort=x',
        undefined,
        asUser,
      );
      expect(bad.status).toBe(400);

      const cliList = await parley([
        'models',
        'list',
        '--url',
        parleyServer.url,
        '--key',
        'user-key-456',
      ]);
      expect(cliList.code).toBe(0);
      expect(cliList.stdout).toContain('MODEL');
      expect(cliList.stdout).toMatch(/openai\/gpt-5\s+tvr\s+400000\s+active/);
      expect(cliList.stdout).not.toContain('openai/gpt-4.1 ');
      const denied = await parley([
        'models',
        'sync',
        '--url',
        parleyServer.url,
        '--key',
        'user-key-456',
      ]);
      expect(denied.code).toBe(1);
      expect(denied.stderr).toContain('forbidden');
    } finally {
      await parleyServer.close();
    }
  });
});
