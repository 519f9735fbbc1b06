import { describe, expect, it } from 'vitest';
import { compileConfig } from '../src/config/load.js';
import { MemoryEffects } from '../src/tools/memory/effects.js';
import {
  builtInTools,
  resolveAgentTools,
  runResolvedTool,
  runTool,
  ToolRegistry,
  validateArguments,
} from '../src/tools/registry.js';
import { callScope } from '../src/tools/scope.js';
import { truncateResult } from '../src/tools/truncate.js';
import { ToolError, type Tool } from '../src/tools/types.js';

const never = new AbortController().signal;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function fake(execute: Tool['execute'], inputSchema: Tool['inputSchema'] = {}): Tool {
  return { name: 'fake', description: 'test', inputSchema, execute };
}

describe('argument validation (Ajv, any JSON Schema)', () => {
  const nested: Tool['inputSchema'] = {
    type: 'object',
    properties: {
      order: {
        type: 'object',
        properties: {
          id: { type: 'integer', minimum: 1 },
          tags: { type: 'array', items: { type: 'string' } },
        },
        required: ['id'],
        additionalProperties: false,
      },
      mode: { enum: ['fast', 'slow'] },
    },
    required: ['order'],
  };

  it.each([
    [{}, 'missing required argument "order"'],
    [{ order: {} }, 'missing required argument "order.id"'],
    [{ order: { id: 0 } }, 'argument "order.id" must be >= 1'],
    [{ order: { id: 1.5 } }, 'argument "order.id" must be an integer'],
    [{ order: { id: 1, tags: [1] } }, 'argument "order.tags.0" must be a string'],
    [{ order: { id: 1, extra: true } }, 'unknown argument "order.extra"'],
    [
      { order: { id: 1 }, mode: 'warp' },
      'argument "mode" must be equal to one of the allowed values',
    ],
    ['a string', 'arguments must be a JSON object'],
  ])('refuses %j: %s', (args, message) => {
    const error = validateArguments({ inputSchema: nested }, args);
    expect(error?.code).toBe('invalid_arguments');
    expect(error?.message).toBe(message);
  });

  it('accepts fitting arguments, and draft 2020-12 schemas', () => {
    expect(
      validateArguments({ inputSchema: nested }, { order: { id: 3, tags: ['a'] } }),
    ).toBeUndefined();
    const modern = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: {
        pair: { type: 'array', prefixItems: [{ type: 'string' }, { type: 'number' }] },
      },
    } as Tool['inputSchema'];
    expect(validateArguments({ inputSchema: modern }, { pair: ['a', 1] })).toBeUndefined();
    expect(validateArguments({ inputSchema: modern }, { pair: [1, 'a'] })?.code).toBe(
      'invalid_arguments',
    );
  });

  it('never echoes the value it refuses', () => {
    const secret = 'sk-live-should-not-echo';
    const error = validateArguments({ inputSchema: nested }, { order: { id: secret } });
    expect(error?.message).not.toContain(secret);
  });

  it('fails a call whose tool declares a schema that does not compile', () => {
    const broken = { type: 'object', properties: { a: { type: 'no-such-type' } } } as never;
    expect(validateArguments({ inputSchema: broken }, {})?.code).toBe('tool_failed');
  });
});

describe('truncateResult', () => {
  it('leaves results within the limit untouched', () => {
    const result = { a: 'x'.repeat(100) };
    expect(truncateResult(result, 1024)).toBe(result);
  });

  it('cuts the longest string with a marker and keeps the shape', () => {
    const result = { url: 'https://example.com/', status: 200, text: 'é'.repeat(50_000) };
    const cut = truncateResult(result, 4096) as typeof result;
    expect(Buffer.byteLength(JSON.stringify(cut))).toBeLessThanOrEqual(4096);
    expect(cut.url).toBe(result.url);
    expect(cut.status).toBe(200);
    expect(cut.text).toMatch(/…\[truncated: showing the first \d+ of 100000 bytes\]$/);
    expect(cut.text).not.toContain('\uFFFD');
    expect(cut.text.match(/truncated/g)).toHaveLength(1);
  });

  it('cuts a plain string, and escapes do not push it over', () => {
    const cut = truncateResult('"\n'.repeat(10_000), 2048) as string;
    expect(Buffer.byteLength(JSON.stringify(cut))).toBeLessThanOrEqual(2048);
    expect(cut).toContain('[truncated');
  });

  it('falls back to a preview when no string is worth cutting', () => {
    const numbers = Array.from({ length: 5000 }, (_, index) => index);
    const cut = truncateResult(numbers, 2048) as { truncated: boolean; preview: string };
    expect(Buffer.byteLength(JSON.stringify(cut))).toBeLessThanOrEqual(2048);
    expect(cut).toMatchObject({ truncated: true, original_bytes: JSON.stringify(numbers).length });
    expect(cut.preview.startsWith('[0,1,2,3')).toBe(true);
  });
});

describe('runTool', () => {
  it('truncates results to maxResultBytes and reports the duration', async () => {
    const big = fake(async () => ({ text: 'y'.repeat(10_000) }));
    const outcome = await runTool(
      big,
      {},
      { signal: never, timeoutMs: 1000, maxResultBytes: 1024 },
    );
    expect(outcome.ok).toBe(true);
    expect(Buffer.byteLength(JSON.stringify(outcome.ok && outcome.result))).toBeLessThanOrEqual(
      1024,
    );
    expect(outcome.durationMs).toBeGreaterThanOrEqual(0);
  });

  it('gives the tool its scope, options and time limit', async () => {
    let seen: unknown;
    const probe = fake(async (_args, context) => {
      seen = { timeoutMs: context.timeoutMs, options: context.options, scope: context.scope };
      return null;
    });
    await runTool(probe, {}, { signal: never, timeoutMs: 1234, options: { k: 1 } });
    expect(seen).toEqual({ timeoutMs: 1234, options: { k: 1 }, scope: null });
  });

  it("at the timeout, takes the tool's own report within the grace period", async () => {
    const polite = fake(
      (_args, { signal }) =>
        new Promise((_resolve, reject) => {
          signal.addEventListener('abort', () => {
            const reason = signal.reason as ToolError;
            reject(new ToolError(reason.code, `stopped cleanly (${reason.code})`));
          });
        }),
    );
    const outcome = await runTool(polite, {}, { signal: never, timeoutMs: 20, graceMs: 5000 });
    expect(outcome).toMatchObject({
      ok: false,
      error: { code: 'timeout', message: 'stopped cleanly (timeout)' },
    });
  });

  it('keeps a result that arrives within the grace period, and gives up after it', async () => {
    const late = fake(async () => {
      await sleep(60);
      return 'done late';
    });
    expect(await runTool(late, {}, { signal: never, timeoutMs: 10, graceMs: 5000 })).toMatchObject({
      ok: true,
      result: 'done late',
    });
    const hang = fake(() => new Promise(() => undefined));
    expect(await runTool(hang, {}, { signal: never, timeoutMs: 10, graceMs: 10 })).toMatchObject({
      ok: false,
      error: { code: 'timeout' },
    });
  });
});

describe('tool entries in the configuration', () => {
  const agentWith = (tools: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    compileConfig({ ...extra, agents: { a: { tools } } });

  it('accepts a policy or a table, and defaults the policy per tool', () => {
    const config = agentWith({
      clock: 'allow',
      calculator: { timeout_ms: 500, idempotent: true },
      shell: { network: false, env: ['LANG'], sandbox: 'bwrap' },
      http_fetch: { policy: 'allow', allow_hosts: ['api.example.com'], max_bytes: 1000 },
    });
    const tools = config.agents.a!.tools;
    expect(tools.clock).toMatchObject({ policy: 'allow', timeoutMs: null, idempotent: false });
    expect(tools.calculator).toMatchObject({ policy: 'allow', timeoutMs: 500, idempotent: true });
    expect(tools.shell?.policy).toBe('approve');
    expect(tools.shell?.options).toMatchObject({ sandbox: 'bwrap', network: false, env: ['LANG'] });
    expect(tools.http_fetch?.options).toMatchObject({
      allowPrivate: false,
      maxBytes: 1000,
      methods: ['GET'],
    });
  });

  it.each([
    [{ http_fetch: { allow_hosts: [] } }, 'agents.a.tools.http_fetch.allow_hosts'],
    [{ http_fetch: { allow_hosts: ['not a host'] } }, 'agents.a.tools.http_fetch.allow_hosts.0'],
    [{ http_fetch: { allow_hosts: ['x.com'], maxbytes: 1 } }, 'agents.a.tools.http_fetch'],
    [{ shell: { sandbox: 'docker' } }, 'agents.a.tools.shell.sandbox'],
    [{ shell: { env: ['PATH'] } }, 'agents.a.tools.shell.env'],
    [{ clock: { policy: 'allow', zone: 'UTC' } }, 'agents.a.tools.clock.zone'],
    [{ clock: { timeout_ms: -1 } }, 'agents.a.tools.clock'],
    [{ orders__lookup: 'allow' }, 'no MCP server named "orders"'],
  ])('refuses %j naming the key', (tools, key) => {
    expect(() => agentWith(tools)).toThrow(key);
  });

  it('accepts MCP tools and whole servers of configured servers', () => {
    const config = agentWith(
      { orders__lookup: 'allow', 'orders__*': { policy: 'deny' } },
      { mcp_servers: { orders: { command: 'node', args: ['x.js'] } } },
    );
    expect(config.agents.a?.tools.orders__lookup?.policy).toBe('allow');
    expect(config.mcpServers.orders).toMatchObject({
      transport: 'stdio',
      command: 'node',
      args: ['x.js'],
      envFrom: [],
      connectTimeoutMs: 10000,
      callTimeoutMs: 30000,
    });
  });

  it('compiles tools, skills_dir and mcp_servers, and checks server names', () => {
    const config = compileConfig({
      storage: { data_dir: '/srv/parley' },
      tools: { max_concurrency: 2 },
      mcp_servers: {
        search: {
          url: 'https://mcp.example.com/mcp',
          headers_from_env: { Authorization: 'SEARCH_AUTH' },
        },
      },
    });
    expect(config.tools).toEqual({
      maxConcurrency: 2,
      maxResultBytes: 65536,
      humanOnly: ['shell', 'http_fetch'],
      workspaceDir: '/srv/parley/workspaces',
    });
    expect(config.skillsDir).toBe('./skills');
    expect(config.mcpServers.search).toMatchObject({
      transport: 'http',
      headersFromEnv: { Authorization: 'SEARCH_AUTH' },
      tenants: [],
    });
    for (const name of ['a__b', '_a', 'a b']) {
      expect(() => compileConfig({ mcp_servers: { [name]: { command: 'x' } } })).toThrow(
        'mcp_servers',
      );
    }
    expect(() => compileConfig({ mcp_servers: { s: { url: 'ftp://x' } } })).toThrow(
      'mcp_servers.s',
    );
    expect(() => compileConfig({ tools: { max_result_bytes: 10 } })).toThrow(
      'tools.max_result_bytes',
    );
  });
});

describe('resolveAgentTools', () => {
  const registry = new ToolRegistry(builtInTools());
  const mcpTool = (name: string): Tool => ({
    ...fake(async () => 'ok'),
    name,
    source: 'mcp:orders',
  });
  registry.replaceSource('mcp:orders', [mcpTool('orders__lookup'), mcpTool('orders__refund')]);

  it("lists the agent's tools with source and policy; MCP tools default to approve", () => {
    const config = compileConfig({
      mcp_servers: { orders: { command: 'node' } },
      agents: {
        a: {
          tools: { clock: 'allow', ask_user: 'allow', orders__refund: 'deny', orders__lookup: {} },
          skills: ['x'],
        },
      },
    });
    const resolved = resolveAgentTools(config.agents.a!, registry).map((tool) => ({
      name: tool.name,
      source: tool.source,
      policy: tool.policy,
      available: tool.tool !== null,
    }));
    expect(resolved).toEqual([
      { name: 'clock', source: 'built-in', policy: 'allow', available: true },
      { name: 'ask_user', source: 'built-in', policy: 'allow', available: false },
      { name: 'orders__refund', source: 'mcp:orders', policy: 'deny', available: true },
      { name: 'orders__lookup', source: 'mcp:orders', policy: 'approve', available: true },
      { name: 'load_skill', source: 'skill', policy: 'allow', available: true },
    ]);
  });

  it('gives an agent only the MCP tools it lists: nothing implicit', () => {
    const config = compileConfig({
      mcp_servers: { orders: { command: 'node' } },
      agents: { a: { tools: { clock: 'allow', orders__lookup: 'allow' } }, b: {} },
    });
    expect(resolveAgentTools(config.agents.a!, registry).map((tool) => tool.name)).toEqual([
      'clock',
      'orders__lookup',
    ]);
    expect(resolveAgentTools(config.agents.b!, registry)).toEqual([]);
  });

  it("offers a tenant's own definition only the MCP servers granted to it", () => {
    const config = compileConfig({
      mcp_servers: { orders: { command: 'node' } },
      agents: { a: { tools: { orders__lookup: 'allow', 'orders__*': 'approve', clock: 'allow' } } },
    });
    const shipped = config.agents.a!;
    const names = (agent: typeof shipped) =>
      resolveAgentTools(agent, registry).map((tool) => tool.name);
    expect(names(shipped)).toEqual(['orders__lookup', 'clock', 'orders__refund']);
    // Whatever a tenant's stored definition lists, an ungranted server's tools are not offered.
    expect(names({ ...shipped, owner: 'globex', mcpGrants: [] })).toEqual(['clock']);
    expect(names({ ...shipped, owner: 'acme', mcpGrants: ['orders'] })).toEqual(names(shipped));
  });

  it("applies a server__* entry to the server's unlisted tools, and follows list changes", () => {
    const config = compileConfig({
      mcp_servers: { orders: { command: 'node' } },
      agents: { a: { tools: { 'orders__*': { policy: 'allow', timeout_ms: 777 } } } },
    });
    const before = resolveAgentTools(config.agents.a!, registry);
    expect(before.map((tool) => [tool.name, tool.policy, tool.timeoutMs])).toEqual([
      ['orders__lookup', 'allow', 777],
      ['orders__refund', 'allow', 777],
    ]);
    const changed = new ToolRegistry(registry);
    changed.replaceSource('mcp:orders', [mcpTool('orders__cancel')]);
    expect(resolveAgentTools(config.agents.a!, changed).map((tool) => tool.name)).toEqual([
      'orders__cancel',
    ]);
  });
});

describe('what the runtime calls: callScope and runResolvedTool', () => {
  const config = compileConfig({
    storage: { data_dir: '/srv/parley' },
    agents: { a: { tools: { calculator: { timeout_ms: 1234 }, remember: 'allow' } } },
  });

  it("builds a scope with the session's working directory and the turn's memory", () => {
    const turn = new MemoryEffects();
    const id = turn.remember('saved with the burst');
    const base = { tenant: 'acme', agent: 'a', user: 'u', sessionId: 'S1', callId: 'c1' };
    const scope = callScope(config, { ...base, memory: turn });
    expect(scope.workspaceDir).toBe('/srv/parley/workspaces/acme/S1');
    expect(scope.memory).toBe(turn);
    // After a crash: the buffer is rebuilt from the effects saved with the burst.
    const rebuilt = callScope(config, { ...base, memory: JSON.parse(JSON.stringify(turn.list())) });
    expect(rebuilt.memory.pending()).toEqual([{ memory_id: id, text: 'saved with the burst' }]);
  });

  it('runs a resolved tool with its timeout and options, and refuses an unavailable one', async () => {
    const resolved = resolveAgentTools(config.agents.a!, builtInTools());
    const calculator = resolved.find((tool) => tool.name === 'calculator')!;
    expect(calculator.timeoutMs).toBe(1234);
    const call = { signal: never, scope: null, maxResultBytes: 65536 };
    expect(await runResolvedTool(calculator, { expression: '6*7' }, call)).toMatchObject({
      ok: true,
      result: { result: 42 },
    });
    const gone = { ...calculator, name: 'orders__lookup', tool: null };
    expect(await runResolvedTool(gone, {}, call)).toMatchObject({
      ok: false,
      error: { code: 'unavailable' },
    });
  });
});
