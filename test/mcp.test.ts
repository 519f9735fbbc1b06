import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileConfig } from '../src/config/load.js';
import { createLogger } from '../src/log.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { serverRefusal } from '../src/tools/mcp/connection.js';
import { McpManager } from '../src/tools/mcp/manager.js';
import { exposedToolName, providerSafeName } from '../src/tools/mcp/names.js';
import { resolveAgentTools, runTool, ToolRegistry } from '../src/tools/registry.js';
import { startHttpFixture, type HttpFixture } from './fixtures/mcp/http-server.js';
import { until } from './support/poll.js';

// Two real MCP servers written with the SDK: one over stdio (a child process this test
// kills), one over Streamable HTTP on 127.0.0.1.

const stdioServer = fileURLToPath(new URL('./fixtures/mcp/stdio-server.ts', import.meta.url));
const token = 'fixture-bearer-token-5d2';
let http: HttpFixture;
let manager: McpManager;
const registry = new ToolRegistry();
const log = createLogger({ level: 'silent' });

const config = () =>
  compileConfig({
    mcp_servers: {
      fixture: {
        command: process.execPath,
        args: ['--import', 'tsx', stdioServer],
        env_from: ['FIXTURE_TOKEN'],
        call_timeout_ms: 5000,
      },
      remote: { url: http.url, headers_from_env: { Authorization: 'REMOTE_AUTH' } },
      broken: { command: '/nonexistent/mcp-server', connect_timeout_ms: 2000 },
    },
    agents: {
      a: { tools: { fixture__echo: 'allow', 'remote__*': 'deny', remote__add: 'allow' } },
      // The calls below go through an agent that lists both servers whole.
      caller: { tools: { 'fixture__*': 'allow', 'remote__*': 'allow' } },
    },
  });

beforeAll(async () => {
  http = await startHttpFixture(token);
  manager = new McpManager(config().mcpServers, registry, {
    env: {
      FIXTURE_TOKEN: 'passed-through',
      FIXTURE_OTHER: 'not-passed',
      REMOTE_AUTH: `Bearer ${token}`,
    },
    log,
    backoffMs: () => 200,
  });
  await manager.start();
});
afterAll(async () => {
  await manager.stop();
  await http.close();
});

async function call(name: string, args: unknown, timeoutMs?: number) {
  const agent = config().agents.caller!;
  const entry = resolveAgentTools(agent, registry).find((tool) => tool.name === name);
  if (!entry?.tool) throw new Error(`no tool ${name}`);
  return runTool(entry.tool, args, {
    signal: new AbortController().signal,
    timeoutMs: timeoutMs ?? entry.timeoutMs,
    graceMs: 100,
  });
}

describe('MCP servers', () => {
  it('start without failing on a broken server, and report each one', () => {
    const status = Object.fromEntries(manager.status().map((server) => [server.name, server]));
    expect(status.fixture).toMatchObject({ transport: 'stdio', state: 'ready', error: null });
    expect(status.remote).toMatchObject({ transport: 'http', state: 'ready', tools: 7 });
    expect(status.broken).toMatchObject({ state: 'down', error: 'ENOENT', tools: 0 });
  });

  it('join the registry as server__tool with provider-safe names', () => {
    const names = [...registry.keys()].sort();
    expect(names).toEqual(
      expect.arrayContaining(['fixture__echo', 'fixture__add', 'fixture__env', 'remote__echo']),
    );
    expect(names.every((name) => providerSafeName.test(name))).toBe(true);
    expect(names).toContain(exposedToolName('fixture', 'dotted.name'));
    expect(exposedToolName('fixture', 'dotted.name')).toMatch(/^fixture__dotted_name_[0-9a-f]{8}$/);
    expect(exposedToolName('s', 'x'.repeat(100))).toHaveLength(64);
    expect(registry.get('fixture__echo')?.source).toBe('mcp:fixture');
  });

  it("get their policies: listed, or server__*; an unlisted tool is not the agent's", () => {
    const resolved = resolveAgentTools(config().agents.a!, registry);
    const policy = (name: string) => resolved.find((tool) => tool.name === name)?.policy;
    expect(policy('fixture__echo')).toBe('allow');
    expect(policy('fixture__add')).toBeUndefined();
    expect(policy('remote__add')).toBe('allow');
    expect(policy('remote__echo')).toBe('deny');
  });

  it('are called over stdio and over HTTP, with the configured environment and headers', async () => {
    expect(await call('fixture__echo', { text: 'hi' })).toMatchObject({
      ok: true,
      result: 'echo: hi',
    });
    expect(await call('remote__add', { a: 2, b: 3 })).toMatchObject({
      ok: true,
      result: { sum: 5 },
    });
    expect(http.authorizations.every((value) => value === `Bearer ${token}`)).toBe(true);
    const env = await call('fixture__env', {});
    expect(JSON.parse((env as { result: string }).result)).toEqual({
      FIXTURE_TOKEN: 'passed-through',
      FIXTURE_OTHER: null,
    });
  });

  it("check arguments against the server's schema before calling, and report tool errors", async () => {
    expect(await call('fixture__add', { a: 'two', b: 3 })).toMatchObject({
      ok: false,
      error: { code: 'invalid_arguments', message: 'argument "a" must be a finite number' },
    });
    expect(await call('fixture__fail', {})).toMatchObject({
      ok: false,
      error: { code: 'tool_failed', message: 'the fixture failed on purpose' },
    });
  });

  it('does not offer a tool that only runs as an MCP task', () => {
    expect(registry.has('fixture__echo')).toBe(true);
    expect(registry.has('fixture__tasky')).toBe(false);
    expect(registry.has('remote__tasky')).toBe(false);
  });

  it("reports a server's JSON-RPC refusal with its code and message, not as a lost connection", () => {
    const refusal = new McpError(-32600, 'Tool "x" requires task-based execution.');
    expect(serverRefusal(refusal)).toBe('error -32600: Tool "x" requires task-based execution.');
    // Transport failures and the SDK's own timeout are not refusals.
    expect(serverRefusal(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }))).toBe(null);
    expect(serverRefusal(new McpError(-32001, 'Request timed out'))).toBe(null);
  });

  it('time out a slow call, and the server keeps working', async () => {
    expect(await call('fixture__slow', { ms: 5000 }, 300)).toMatchObject({
      ok: false,
      error: { code: 'timeout' },
    });
    expect(await call('fixture__echo', { text: 'still here' })).toMatchObject({ ok: true });
  });

  it('refresh the registry on tools/list_changed', async () => {
    expect(registry.has('fixture__extra')).toBe(false);
    expect(await call('fixture__grow', {})).toMatchObject({ ok: true, result: 'grown' });
    await until(() => registry.has('fixture__extra'), Boolean, 'fixture__extra to appear');
    expect(await call('fixture__extra', {})).toMatchObject({ ok: true, result: 'extra!' });
  });

  it('restart a stdio server that dies; its calls fail as tool errors meanwhile', async () => {
    const first = Number(((await call('fixture__pid', {})) as { result: string }).result);
    process.kill(first, 'SIGKILL');
    await until(
      () => manager.status().find((s) => s.name === 'fixture')!.state,
      (s) => s !== 'ready',
      'the loss to be seen',
    );
    const during = await call('fixture__echo', { text: 'anyone?' });
    expect(during).toMatchObject({ ok: false, error: { code: 'unavailable' } });
    // Its tools stay listed for the model but say they cannot run now.
    expect(registry.get('fixture__echo')?.available?.()).toBe(false);
    await until(
      () => manager.status().find((server) => server.name === 'fixture')!,
      (server) => server.state === 'ready',
      'the fixture to be restarted',
    );
    const second = Number(((await call('fixture__pid', {})) as { result: string }).result);
    expect(second).not.toBe(first);
    expect(registry.get('fixture__echo')?.available?.()).toBe(true);
    expect(manager.status().find((server) => server.name === 'fixture')?.restarts).toBe(1);
    expect(await call('fixture__echo', { text: 'back' })).toMatchObject({
      ok: true,
      result: 'echo: back',
    });
  });

  it('report a Streamable HTTP server that refuses the credentials, without throwing', async () => {
    const refused = new ToolRegistry();
    const other = new McpManager(config().mcpServers, refused, {
      env: { REMOTE_AUTH: 'Bearer wrong' },
      log,
      backoffMs: () => 60_000,
    });
    try {
      await other.start();
      const remote = other.status().find((server) => server.name === 'remote');
      expect(remote).toMatchObject({ state: 'down', error: 'HTTP 401' });
      expect(JSON.stringify(other.status())).not.toContain('wrong');
      expect([...refused.keys()].some((name) => name.startsWith('remote__'))).toBe(false);
    } finally {
      await other.stop();
    }
  });
});
