import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeStartup, startProcess, type Running } from '../src/cli/start.js';
import { createLogger } from '../src/log.js';
import { applyMemoryEffects } from '../src/store/applyMemoryEffects.js';
import { MemoryEffects } from '../src/tools/memory/effects.js';
import { runTool } from '../src/tools/registry.js';
import { workspaceDir } from '../src/tools/shell/workspace.js';
import { testConfig } from './support/config.js';
import { freshStorage } from './support/db.js';
import { checkJournalInvariants } from './support/invariants.js';
import { until } from './support/poll.js';
import { request } from './support/server.js';

// The HTTP side of the tools (files, memories, agent tools), `parley tools list`, an MCP
// tool under the approval policy end to end, and the start-up rules for the shell sandbox.

const stdioServer = fileURLToPath(new URL('./fixtures/mcp/stdio-server.ts', import.meta.url));
const keys = {
  alice: 'alice-key-tools-1a2b',
  carol: 'carol-key-tools-3c4d',
  bob: 'bob-key-tools-5e6f',
};
const as = (key: string) => ({ authorization: `Bearer ${key}` });
let running: Running;
let url: string;
let drop: () => Promise<void>;
let skillsDir: string;
let counter = 0;
/** The configured root of the working directories (<data_dir>/workspaces). */
let workspaceRoot: string;

const mcpServers = {
  fixture: { command: process.execPath, args: ['--import', 'tsx', stdioServer] },
};

beforeAll(async () => {
  skillsDir = mkdtempSync(join(tmpdir(), 'parley-api-skills-'));
  mkdirSync(join(skillsDir, 'refunds'));
  writeFileSync(
    join(skillsDir, 'refunds', 'SKILL.md'),
    '---\nname: refunds\ndescription: Refund rules\n---\nRefund within 30 days.',
  );
  const fresh = await freshStorage();
  drop = fresh.drop;
  const config = testConfig(
    fresh.storage,
    {
      auth: {
        keys: [
          { key_env: 'K_ALICE', tenant: 'acme', user: 'alice', roles: [] },
          { key_env: 'K_CAROL', tenant: 'acme', user: 'carol', roles: ['admin'] },
          { key_env: 'K_BOB', tenant: 'globex', user: 'bob', roles: ['admin'] },
        ],
      },
      skills_dir: skillsDir,
      mcp_servers: mcpServers,
      agents: {
        default: {
          model: 'demo/echo',
          // An agent has the MCP tools it lists, nothing more: fixture__echo under the
          // default policy (approve), fixture__fail denied; fixture__add is not its tool.
          tools: {
            clock: 'allow',
            shell: {},
            remember: 'allow',
            fixture__echo: {},
            fixture__fail: 'deny',
          },
          skills: ['refunds'],
        },
      },
    },
    { K_ALICE: keys.alice, K_CAROL: keys.carol, K_BOB: keys.bob },
  );
  workspaceRoot = config.tools.workspaceDir;
  running = await startProcess(
    config,
    { api: true, worker: true },
    createLogger({ level: 'silent' }),
  );
  url = running.url as string;
});
afterAll(async () => {
  await checkJournalInvariants(running.db);
  await running.stop();
  await drop();
  rmSync(skillsDir, { recursive: true, force: true });
});

async function newSession(key: string): Promise<string> {
  const created = await request(url, 'POST', '/api/v1/chat/sessions', {}, as(key));
  expect(created.status).toBe(201);
  return created.body.session_id as string;
}

describe('GET /api/v1/chat/sessions/{id}/files', () => {
  it("lists the session's working directory, tenant-scoped", async () => {
    const sessionId = await newSession(keys.alice);
    const empty = await request(
      url,
      'GET',
      `/api/v1/chat/sessions/${sessionId}/files`,
      undefined,
      as(keys.alice),
    );
    expect(empty).toMatchObject({
      status: 200,
      body: { session_id: sessionId, files: [], truncated: false },
    });
    // What a shell call in this session leaves behind (the runtime gives it this scope).
    const scope = {
      tenant: 'acme',
      agent: 'default',
      user: 'alice',
      sessionId,
      callId: 'c1',
      workspaceDir: workspaceDir(workspaceRoot, 'acme', sessionId),
      memory: new MemoryEffects(),
    };
    const shell = running.tools.get('shell')!;
    const options = { sandbox: 'bwrap', network: false, env: [], maxOutputBytes: 65536 };
    const ran = await runTool(
      shell,
      { command: 'mkdir out && echo 42 > out/answer.txt' },
      {
        signal: new AbortController().signal,
        timeoutMs: 20_000,
        scope,
        options,
      },
    );
    expect(ran).toMatchObject({ ok: true, result: { exit_code: 0 } });
    const listed = await request(
      url,
      'GET',
      `/api/v1/chat/sessions/${sessionId}/files`,
      undefined,
      as(keys.carol),
    );
    expect(
      listed.body.files.map((file: any) => [
        file.path,
        file.type,
        file.type === 'file' ? file.size : 0,
      ]),
    ).toEqual([
      ['out', 'directory', 0],
      ['out/answer.txt', 'file', 3],
    ]);
    for (const [id, key] of [
      [sessionId, keys.bob],
      ['01NOSUCHSESSION', keys.alice],
    ] as const) {
      const missing = await request(
        url,
        'GET',
        `/api/v1/chat/sessions/${id}/files`,
        undefined,
        as(key),
      );
      expect(missing).toMatchObject({ status: 404, body: { error: 'session_not_found' } });
    }
  });
});

describe('/api/v1/memories', () => {
  const remembered: Record<string, string> = {};
  beforeAll(async () => {
    for (const [tenant, user, text] of [
      ['acme', 'alice', 'alice likes tea'],
      ['acme', 'alice', 'alice plays chess'],
      ['acme', 'carol', 'carol runs marathons'],
      ['globex', 'bob', 'bob collects stamps'],
    ] as const) {
      const effects = new MemoryEffects();
      remembered[text] = effects.remember(text);
      await running.db.transaction((tx) =>
        applyMemoryEffects(tx, { tenant, agent: 'default', user, sessionId: null }, effects.list()),
      );
    }
  });
  const texts = (body: any) => body.items.map((item: any) => item.text).sort();

  it("lists the principal's own memories; admins may name a user or everyone in the tenant", async () => {
    const own = await request(url, 'GET', '/api/v1/memories', undefined, as(keys.alice));
    expect(own.status).toBe(200);
    expect(texts(own.body)).toEqual(['alice likes tea', 'alice plays chess']);
    expect(own.body.items[0]).toMatchObject({
      agent: 'default',
      user: 'alice',
      memory_id: expect.stringMatching(/^mem_/),
    });
    const forbidden = await request(
      url,
      'GET',
      '/api/v1/memories?user=carol',
      undefined,
      as(keys.alice),
    );
    expect(forbidden).toMatchObject({ status: 403, body: { error: 'forbidden' } });
    const admin = await request(url, 'GET', '/api/v1/memories?user=*', undefined, as(keys.carol));
    expect(texts(admin.body)).toEqual([
      'alice likes tea',
      'alice plays chess',
      'carol runs marathons',
    ]);
    const other = await request(url, 'GET', '/api/v1/memories?user=*', undefined, as(keys.bob));
    expect(texts(other.body)).toEqual(['bob collects stamps']);
    const paged = await request(url, 'GET', '/api/v1/memories?limit=1', undefined, as(keys.alice));
    expect(paged.body.items).toHaveLength(1);
    const next = await request(
      url,
      'GET',
      `/api/v1/memories?limit=1&cursor=${paged.body.next_cursor}`,
      undefined,
      as(keys.alice),
    );
    expect(next.body.items).toHaveLength(1);
    expect(next.body.items[0].memory_id).not.toBe(paged.body.items[0].memory_id);
    for (const query of ['cursor=garbage', 'limit=0', 'color=red']) {
      const bad = await request(url, 'GET', `/api/v1/memories?${query}`, undefined, as(keys.alice));
      expect(bad.status, query).toBe(400);
    }
  });

  it('deletes only what the principal may: own, or any in the tenant for admins', async () => {
    const del = (id: string, key: string) =>
      request(url, 'DELETE', `/api/v1/memories/${id}`, undefined, as(key));
    const tea = remembered['alice likes tea']!;
    expect(await del(tea, keys.bob)).toMatchObject({ status: 404, body: { error: 'not_found' } });
    expect((await del(remembered['carol runs marathons']!, keys.alice)).status).toBe(404);
    expect(await del(tea, keys.alice)).toMatchObject({
      status: 200,
      body: { memory_id: tea, deleted: true },
    });
    expect((await del(tea, keys.alice)).status).toBe(404);
    expect((await del(remembered['alice plays chess']!, keys.carol)).status).toBe(200);
    const left = await request(url, 'GET', '/api/v1/memories?user=*', undefined, as(keys.carol));
    expect(texts(left.body)).toEqual(['carol runs marathons']);
    const bobs = await request(url, 'GET', '/api/v1/memories', undefined, as(keys.bob));
    expect(texts(bobs.body)).toEqual(['bob collects stamps']);
  });
});

describe('agent tools: the API and parley tools list', () => {
  it('lists every tool of an agent with source, policy and availability', async () => {
    const listed = await request(
      url,
      'GET',
      '/api/v1/agents/default/tools',
      undefined,
      as(keys.alice),
    );
    expect(listed.status).toBe(200);
    const rows = Object.fromEntries(
      listed.body.tools.map((tool: any) => [tool.name, [tool.source, tool.policy, tool.available]]),
    );
    expect(rows).toMatchObject({
      clock: ['built-in', 'allow', true],
      shell: ['built-in', 'approve', true],
      remember: ['built-in', 'allow', true],
      fixture__fail: ['mcp:fixture', 'deny', true],
      fixture__echo: ['mcp:fixture', 'approve', true],
      load_skill: ['skill', 'allow', true],
    });
    expect(rows.fixture__add).toBeUndefined();
    expect(listed.body.mcp_servers).toEqual([
      expect.objectContaining({ name: 'fixture', state: 'ready', transport: 'stdio' }),
    ]);
    const unknown = await request(
      url,
      'GET',
      '/api/v1/agents/nobody/tools',
      undefined,
      as(keys.alice),
    );
    expect(unknown).toMatchObject({ status: 404, body: { error: 'unknown_agent' } });
  });

  it('parley tools list prints them through the API', async () => {
    const output = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const child = spawn(
        process.execPath,
        ['dist/cli/main.js', 'tools', 'list', '--url', url, '--key', keys.alice],
        {
          env: { ...process.env, PARLEY_CONFIG: '', DATABASE_URL: '' },
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.on('exit', (code) => resolve({ code, stdout }));
    });
    expect(output.code).toBe(0);
    expect(output.stdout).toContain('agent default');
    expect(output.stdout).toMatch(/fixture__echo\s+mcp:fixture\s+approve\s+yes/);
    expect(output.stdout).toMatch(/shell\s+built-in\s+approve\s+yes/);
    expect(output.stdout).toMatch(/load_skill\s+skill\s+allow\s+yes/);
    expect(output.stdout).toContain('mcp fixture (stdio): ready');
  });
});

describe('an MCP tool in a turn', () => {
  it('is offered under its default approve policy and runs once approved', async () => {
    const turnId = `mcp_${counter++}`;
    const admitted = await request(
      url,
      'POST',
      '/api/v1/chat/turns',
      { turn_id: turnId, message: '/tool fixture__echo {"text": "via mcp"}' },
      as(keys.alice),
    );
    expect(admitted.status).toBe(202);
    const sessionId = admitted.body.session_id as string;
    const journal = async () =>
      (
        await running.db.query<{ type: string; payload: any; sequence: number }>(
          'select type, payload, sequence from events where session_id = $1 order by sequence',
          [sessionId],
        )
      ).rows;
    const waiting = await until(
      journal,
      (rows) => rows.some((row) => row.type === 'input_required'),
      'the approval request',
    );
    const required = waiting.find((row) => row.type === 'input_required')!;
    expect(required.payload).toMatchObject({ kind: 'approval', tool: 'fixture__echo' });
    expect(waiting.some((row) => row.type === 'tool_result')).toBe(false);
    const answer = await request(
      url,
      'POST',
      `/api/v1/chat/sessions/${sessionId}/inputs/${required.payload.request_id}`,
      { expected_sequence: required.sequence, approved: true },
      as(keys.alice),
    );
    expect(answer.status).toBe(200);
    const done = await until(
      journal,
      (rows) => rows.some((row) => row.type === 'done'),
      'the reply',
    );
    expect(done.find((row) => row.type === 'tool_result')?.payload).toMatchObject({
      tool: 'fixture__echo',
      ok: true,
      result: 'echo: via mcp',
    });
  });

  it('a denied MCP tool is refused without running', async () => {
    const admitted = await request(
      url,
      'POST',
      '/api/v1/chat/turns',
      { turn_id: `mcp_${counter++}`, message: '/tool fixture__fail {}' },
      as(keys.alice),
    );
    const sessionId = admitted.body.session_id as string;
    const rows = await until(
      async () =>
        (
          await running.db.query<{ type: string; payload: any }>(
            'select type, payload from events where session_id = $1 order by sequence',
            [sessionId],
          )
        ).rows,
      (list) => list.some((row) => row.type === 'done'),
      'the reply',
    );
    expect(rows.find((row) => row.type === 'tool_result')?.payload).toMatchObject({
      ok: false,
      error: { code: 'denied' },
    });
  });
});

describe('the OpenAPI document', () => {
  it('describes the tool endpoints', async () => {
    const openapi = await request(url, 'GET', '/api/v1/openapi.json');
    for (const path of [
      '/api/v1/chat/sessions/{session_id}/files',
      '/api/v1/memories',
      '/api/v1/memories/{memory_id}',
      '/api/v1/agents/{name}/tools',
    ]) {
      expect(openapi.body.paths[path], path).toBeDefined();
    }
  });
});

describe('start-up and the shell sandbox', () => {
  const start = async (shell: Record<string, unknown>, bwrap?: string) => {
    const fresh = await freshStorage();
    const config = testConfig(fresh.storage, { agents: { ops: { tools: { shell } } } });
    try {
      const process = await startProcess(
        config,
        { api: false, worker: true },
        createLogger({ level: 'silent' }),
        bwrap ? { bwrap } : {},
      );
      const lines = describeStartup(config, process, 'serve');
      await process.stop();
      return lines;
    } finally {
      await fresh.drop();
    }
  };

  it('says which sandbox each agent with shell uses', async () => {
    expect((await start({})).join('\n')).toContain(
      'shell (agent ops): bubblewrap sandbox, no network',
    );
    expect((await start({ sandbox: 'none' }, 'bwrap-not-installed')).join('\n')).toContain(
      'shell (agent ops): NO sandbox (sandbox: none)',
    );
  });

  it('fails when bwrap is missing unless the agent sets sandbox: none', async () => {
    await expect(start({ policy: 'allow' }, 'bwrap-not-installed')).rejects.toThrow(
      /agents\.ops\.tools\.shell: bwrap is not installed.*sandbox: none/,
    );
    // A denied shell is not enabled: nothing to check.
    expect(await start({ policy: 'deny' }, 'bwrap-not-installed')).not.toContain('shell');
  });

  it('fails on a skill an agent lists that does not exist', async () => {
    const fresh = await freshStorage();
    const config = testConfig(fresh.storage, {
      skills_dir: skillsDir,
      agents: { a: { skills: ['nope'] } },
    });
    await expect(
      startProcess(config, { api: false, worker: true }, createLogger({ level: 'silent' })),
    ).rejects.toThrow('agents.a.skills.0: skill "nope"');
    await fresh.drop();
  });
});
