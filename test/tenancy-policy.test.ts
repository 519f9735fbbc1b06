import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Directory } from '../src/agents/directory.js';
import { startProcess } from '../src/cli/start.js';
import { compileConfig } from '../src/config/load.js';
import { createLogger } from '../src/log.js';
import { putDefinition } from '../src/store/putDefinition.js';
import { testConfig } from './support/config.js';
import { freshStorage } from './support/db.js';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// The privilege layer: the operator's file decides what a tenant admin's PUT of an agent
// or a mission may set (tenancy.agent_policy, mcp_servers.X.tenants, tools.human_only);
// anything else answers 403 operator_only_key naming the key, a number above its ceiling
// 400 invalid_definition naming the ceiling, and nothing is written. A shipped definition
// round-trips. MCP tools reach only the agents that list them, of tenants granted them.
// Deployment-wide actions (catalog sync, prune, metrics) are the operator's.

const stdioServer = fileURLToPath(new URL('./fixtures/mcp/stdio-server.ts', import.meta.url));
const keys = { K_ROOT: 'root-key-priv', K_ALICE: 'alice-key-priv', K_GINA: 'gina-key-priv' };
const root = { authorization: 'Bearer root-key-priv' };
const alice = { authorization: 'Bearer alice-key-priv' };
const gina = { authorization: 'Bearer gina-key-priv' };
let server: TestServer;
let counter = 0;

const fixture = { command: process.execPath, args: ['--import', 'tsx', stdioServer] };
const settings = {
  auth: {
    keys: [
      { key_env: 'K_ROOT', tenant: 'acme', user: 'root', roles: ['admin'], operator: true },
      { key_env: 'K_ALICE', tenant: 'acme', user: 'alice', roles: ['admin'] },
      { key_env: 'K_GINA', tenant: 'globex', user: 'gina', roles: ['admin'] },
    ],
  },
  tenancy: {
    // shell is left to tenants here (its sandbox, env and network never are); remember is not.
    // vault__add is granted to every tenant by the policy itself.
    agent_policy: {
      tools: ['clock', 'calculator', 'http_fetch', 'shell', 'ask_user', 'vault__add'],
    },
  },
  // orders is granted to acme; vault to no tenant (only the operator's agents list it).
  mcp_servers: { orders: { ...fixture, tenants: ['acme'] }, vault: fixture },
  agents: {
    default: { tools: { clock: 'allow', calculator: 'allow' } },
    desk: {
      tools: {
        vault__echo: 'approve',
        remember: 'allow',
        shell: { policy: 'approve', sandbox: 'none', timeout_ms: 300_000 },
        http_fetch: { allow_hosts: ['intranet.example.com'], allow_private: true },
      },
      budgets: { max_iterations: 50 },
    },
  },
  missions: { report: { prompt: 'Report.', max_iterations: 150 } },
  limits: { mission_iterations: 200 },
};

beforeAll(async () => {
  server = await startTestServer(settings, keys);
  // Both servers' tools are listed before any test names them.
  await until(
    () => server.mcp.status(),
    (status) => status.every((entry) => entry.state === 'ready'),
    'the MCP fixtures',
  );
});
afterAll(async () => {
  await server.close();
});

/** Every definition row, to prove a refused PUT wrote nothing. */
async function definitions(): Promise<string> {
  const rows = await server.db.query(
    `select kind, tenant, name, definition, content_hash, updated_at from definitions
      order by kind, tenant, name`,
  );
  return JSON.stringify(rows.rows);
}

const put = (who: Record<string, string>, path: string, body: unknown) =>
  request(server.url, 'PUT', path, body, who);

/** One turn (in a new session, or in `sessionId`); its journal once it ended. */
async function turn(
  who: Record<string, string>,
  agent: string,
  message: string,
  sessionId?: string,
) {
  const admitted = await request(
    server.url,
    'POST',
    '/api/v1/chat/turns',
    sessionId === undefined
      ? { turn_id: `priv_${counter++}`, agent, message }
      : { turn_id: `priv_${counter++}`, session_id: sessionId, message },
    who,
  );
  expect(admitted.status).toBe(202);
  const admittedTo = admitted.body.session_id as string;
  return until(
    async () =>
      (
        await server.db.query<{ type: string; payload: any }>(
          'select type, payload from events where session_id = $1 and turn_id = $2 order by sequence',
          [admittedTo, admitted.body.turn_id],
        )
      ).rows,
    (rows) => rows.some((row) => ['done', 'error', 'input_required'].includes(row.type)),
    `the end of a turn of ${agent}`,
  );
}

describe('a tenant admin may not set operator-only keys', () => {
  it('answers 403 operator_only_key naming the key, and writes nothing', async () => {
    const before = await definitions();
    const cases: [Record<string, string>, string, unknown, string][] = [
      [alice, 'agents/default', { tools: { shell: { sandbox: 'none' } } }, 'tools.shell.sandbox'],
      [alice, 'agents/default', { tools: { shell: { env: ['DATABASE_URL'] } } }, 'tools.shell.env'],
      [alice, 'agents/default', { tools: { shell: { network: true } } }, 'tools.shell.network'],
      [
        alice,
        'agents/default',
        { tools: { http_fetch: { allow_hosts: ['169.254.169.254'], allow_private: true } } },
        'tools.http_fetch.allow_private',
      ],
      [alice, 'agents/default', { tools: { vault__echo: 'allow' } }, 'tools.vault__echo'],
      [alice, 'agents/default', { tools: { 'vault__*': 'approve' } }, 'tools.vault__*'],
      [gina, 'agents/default', { tools: { orders__echo: 'approve' } }, 'tools.orders__echo'],
      [alice, 'agents/default', { tools: { remember: 'allow' } }, 'tools.remember'],
      [
        alice,
        'agents/default',
        { tools: { shell: { policy: 'approve', human_only: false } } },
        'tools.shell.human_only',
      ],
      // A call nobody approved runs only where the operator said so.
      [
        alice,
        'agents/default',
        { tools: { calculator: { policy: 'approve', on_timeout: 'approve' } } },
        'tools.calculator.on_timeout',
      ],
      // A mission's too, for every approval its executions raise.
      [alice, 'missions/report', { prompt: 'Report.', on_timeout: 'approve' }, 'on_timeout'],
      // A remote A2A agent is a URL the server calls with a key it holds.
      [
        alice,
        'agents/rogue',
        { tools: { billing: { a2a: 'http://169.254.169.254/card.json', policy: 'allow' } } },
        'tools.billing.a2a',
      ],
      // A created agent has no operator's definition to repeat.
      [alice, 'agents/rogue', { tools: { shell: { sandbox: 'none' } } }, 'tools.shell.sandbox'],
      // desk's shell runs unsandboxed by the operator's choice; a tenant's copy keeps that
      // value exactly or leaves the key out (then: bwrap).
      [
        alice,
        'agents/desk',
        { tools: { shell: { policy: 'approve', sandbox: 'bwrap', timeout_ms: 300_000 } } },
        'tools.shell.sandbox',
      ],
      // Changing the operator's entry of a tool the policy does not list is enabling it anew.
      [alice, 'agents/desk', { tools: { remember: 'approve' } }, 'tools.remember'],
      [alice, 'agents/desk', { tools: { vault__echo: 'allow' } }, 'tools.vault__echo'],
      // A regular expression in a state schema runs in a worker every tenant shares.
      [
        alice,
        'agents/default',
        {
          state: {
            schema: {
              type: 'object',
              properties: { code: { type: 'string', pattern: '^(a+)+$' } },
            },
            initial: {},
          },
        },
        'state.schema.properties.code.pattern',
      ],
    ];
    for (const [who, path, body, key] of cases) {
      const answer = await put(who, `/api/v1/${path}`, body);
      expect(answer.status, JSON.stringify(body)).toBe(403);
      expect(answer.body).toMatchObject({ error: 'operator_only_key', key });
      expect(answer.body.message).toContain(path.replace('/', '.'));
      expect(answer.body.message).toContain(key);
    }
    expect(await definitions()).toBe(before);
  });

  it('answers 400 invalid_definition naming the key and its ceiling, and writes nothing', async () => {
    const before = await definitions();
    const cases: [string, unknown, string][] = [
      [
        'agents/default',
        { tools: { clock: { timeout_ms: 120_001 } } },
        'agents.default.tools.clock.timeout_ms: at most 120000 (tenancy.agent_policy.max_timeout_ms)',
      ],
      // Above any timer: refused by the operator's schema itself.
      [
        'agents/default',
        { tools: { clock: { timeout_ms: 9_999_999_999 } } },
        'tools.clock.timeout_ms',
      ],
      [
        'agents/default',
        {
          state: {
            schema: { type: 'object', description: 'x'.repeat(20_000) },
            initial: {},
          },
        },
        "state.schema: at most 16384 bytes of JSON Schema in a tenant's definition",
      ],
      [
        'agents/default',
        { budgets: { max_iterations: 33 } },
        'budgets.max_iterations: at most 32 (tenancy.agent_policy.max_iterations)',
      ],
      [
        'agents/default',
        { budgets: { max_tool_calls: 65 } },
        'budgets.max_tool_calls: at most 64 (tenancy.agent_policy.max_tool_calls)',
      ],
      [
        'agents/default',
        { max_output_tokens: 100_000 },
        'max_output_tokens: at most 32768 (tenancy.agent_policy.max_output_tokens)',
      ],
      [
        'agents/default',
        { gate: { model: 'demo/echo', topic: 'x', timeout_ms: 200_000 } },
        'gate.timeout_ms: at most 120000',
      ],
      [
        'agents/default',
        { tools: { http_fetch: { allow_hosts: ['a.example.com'], max_bytes: 2_000_000 } } },
        'tools.http_fetch.max_bytes: at most 1048576 (tenancy.agent_policy.max_bytes)',
      ],
      [
        'agents/default',
        { tools: { http_fetch: { allow_hosts: ['a.example.com'], max_redirects: 11 } } },
        'tools.http_fetch.max_redirects: at most 10',
      ],
      [
        'agents/default',
        { tools: { shell: { max_output_bytes: 2_000_000 } } },
        'tools.shell.max_output_bytes: at most 1048576 (tenancy.agent_policy.max_output_bytes)',
      ],
      // desk's operator value (300000) is the bound of its shell's timeout, not the policy's.
      [
        'agents/desk',
        { tools: { shell: { sandbox: 'none', timeout_ms: 300_001 } } },
        "tools.shell.timeout_ms: at most 300000 (the operator's definition of this name)",
      ],
      // The checks start-up applies to the file: a skill that is not in skills_dir.
      ['agents/default', { skills: ['nope'] }, 'agents.default.skills.0: skill "nope"'],
      [
        'missions/other',
        { prompt: 'x', max_iterations: 101 },
        'missions.other.max_iterations: at most 100 (tenancy.agent_policy.max_mission_iterations)',
      ],
      [
        'missions/other',
        { prompt: 'x', timeout_seconds: 86_401 },
        'timeout_seconds: at most 86400',
      ],
      [
        'missions/other',
        { prompt: 'x', loop_delay_seconds: 86_401 },
        'loop_delay_seconds: at most 86400',
      ],
    ];
    for (const [path, body, message] of cases) {
      const answer = await put(alice, `/api/v1/${path}`, body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.error).toBe('invalid_definition');
      expect(answer.body.message).toContain(message);
    }
    expect(await definitions()).toBe(before);
  });

  it("takes a tenant's state schema without regular expressions, a property named pattern included", async () => {
    const answer = await put(alice, '/api/v1/agents/stateful', {
      state: {
        schema: {
          type: 'object',
          properties: { pattern: { type: 'string', maxLength: 20 } },
        },
        initial: { pattern: 'stripes' },
      },
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  });

  it('round-trips a shipped definition, operator-only keys and higher numbers included', async () => {
    for (const [kind, name] of [
      ['agents', 'desk'],
      ['agents', 'default'],
      ['missions', 'report'],
    ] as const) {
      const shipped = await request(server.url, 'GET', `/api/v1/${kind}/${name}`, undefined, alice);
      expect(shipped.status).toBe(200);
      const again = await put(alice, `/api/v1/${kind}/${name}`, shipped.body.definition);
      expect(again.status, name).toBe(200);
      expect(again.body).toMatchObject({ is_customized: true, refused: null });
      expect(again.body.definition).toEqual(shipped.body.definition);
    }
    // A process loading the tenant's copy says its shell runs unsandboxed, as start-up says
    // it of the operator's agent.
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const other = new Directory({
      db: server.db,
      config: server.config,
      log: createLogger({ level: 'info', destination }),
      env: {},
      pollMs: 60_000,
    });
    await other.seedAndLoad();
    expect(lines.join('')).toMatch(/"tenant":"acme","agent":"desk".*NO sandbox/);
    // Within the operator's values, a tenant may change them; and add human_only.
    const desk = (await request(server.url, 'GET', '/api/v1/agents/desk', undefined, alice)).body
      .definition;
    const edited = structuredClone(desk);
    edited.tools.shell = { ...edited.tools.shell, timeout_ms: 200_000, human_only: true };
    edited.budgets.max_iterations = 40;
    expect((await put(alice, '/api/v1/agents/desk', edited)).status).toBe(200);
    // Denying a tool is always the tenant's to do: nothing runs.
    const denied = await put(alice, '/api/v1/agents/default', {
      tools: {
        remember: 'deny',
        vault__echo: 'deny',
        shell: { policy: 'deny', human_only: false },
      },
    });
    expect(denied.status).toBe(200);
    for (const kind of ['agents/desk', 'agents/default', 'missions/report']) {
      await request(server.url, 'DELETE', `/api/v1/${kind}`, undefined, alice);
    }
  });
});

describe('MCP tools reach only who is granted', () => {
  it("another tenant's user, through the default agent, gets no card and no tool", async () => {
    const listed = await request(
      server.url,
      'GET',
      '/api/v1/agents/default/tools',
      undefined,
      gina,
    );
    expect(listed.body.tools.map((tool: any) => tool.name)).toEqual(['clock', 'calculator']);
    // Nor the names of servers its tools do not come from.
    expect(listed.body.mcp_servers).toEqual([]);
    const rows = await turn(gina, 'default', '/tool orders__echo {"text": "leak"}');
    expect(rows.some((row) => row.type === 'input_required')).toBe(false);
    expect(rows.find((row) => row.type === 'tool_result')?.payload).toMatchObject({
      tool: 'orders__echo',
      ok: false,
      error: { code: 'denied' },
    });
  });

  it('a granted tenant lists the server in its own agent and the tool runs', async () => {
    const created = await put(alice, '/api/v1/agents/orders-bot', {
      tools: { orders__echo: 'allow' },
    });
    expect(created.status).toBe(200);
    const rows = await turn(alice, 'orders-bot', '/tool orders__echo {"text": "granted"}');
    expect(rows.find((row) => row.type === 'tool_result')?.payload).toMatchObject({
      tool: 'orders__echo',
      ok: true,
      result: 'echo: granted',
    });
    await request(server.url, 'DELETE', '/api/v1/agents/orders-bot', undefined, alice);
  });

  it('a tool the policy lists is granted to every tenant, and nothing more of its server', async () => {
    const created = await put(gina, '/api/v1/agents/adder', { tools: { vault__add: 'allow' } });
    expect(created.status).toBe(200);
    const rows = await turn(gina, 'adder', '/tool vault__add {"a": 2, "b": 3}');
    expect(rows.find((row) => row.type === 'tool_result')?.payload).toMatchObject({
      tool: 'vault__add',
      ok: true,
    });
    const more = await put(gina, '/api/v1/agents/adder', { tools: { vault__echo: 'allow' } });
    expect(more.body).toMatchObject({ error: 'operator_only_key', key: 'tools.vault__echo' });
    await request(server.url, 'DELETE', '/api/v1/agents/adder', undefined, gina);
  });
});

describe('a stored definition the policy no longer allows', () => {
  it('is refused at load: its turns end with agent_refused, its admin sees why', async () => {
    const session = await request(server.url, 'POST', '/api/v1/chat/sessions', {}, gina);
    expect(session.body.agent).toBe('default');
    // Written past the API (as a definition stored before the operator tightened the policy).
    await putDefinition(server.db, {
      kind: 'agent',
      tenant: 'globex',
      name: 'default',
      namespace: 'default',
      definition: { tools: { shell: { policy: 'allow', sandbox: 'none', env: ['DATABASE_URL'] } } },
      updatedBy: 'gina',
    });
    await server.directory.refresh();
    expect(server.directory.agents.get('globex', 'default')).toBeUndefined();
    // A new session of it is refused at once (nothing written); a session it has ends
    // its turns with a coded error, and nothing runs.
    const admitted = await request(
      server.url,
      'POST',
      '/api/v1/chat/turns',
      { turn_id: `priv_${counter++}`, agent: 'default', message: 'hi' },
      gina,
    );
    expect(admitted.body.error).toBe('unknown_agent');
    const rows = await turn(
      gina,
      'default',
      '/tool shell {"command": "env"}',
      session.body.session_id,
    );
    expect(rows.some((row) => row.type === 'tool_call' || row.type === 'tool_result')).toBe(false);
    expect(rows.find((row) => row.type === 'error')?.payload).toMatchObject({
      code: 'agent_refused',
    });
    const view = await request(server.url, 'GET', '/api/v1/agents/default', undefined, gina);
    expect(view.body.refused).toContain('agents.default.tools.shell.sandbox');
    // Other tenants keep the shipped agent; the admin restores it with DELETE.
    expect(server.directory.agents.get('acme', 'default')).toBeDefined();
    expect(
      (await request(server.url, 'DELETE', '/api/v1/agents/default', undefined, gina)).status,
    ).toBe(200);
    expect(server.directory.agents.get('globex', 'default')?.owner).toBeNull();
  });

  it('a shell needing bubblewrap is refused at PUT where it cannot run, as start-up refuses it', async () => {
    const fresh = await freshStorage();
    const running = await startProcess(
      testConfig(fresh.storage, settings, keys),
      { api: true, worker: false },
      createLogger({ level: 'silent' }),
      { env: { ...process.env, ...keys }, bwrap: 'bwrap-not-installed' },
    );
    try {
      const answer = await request(
        running.url as string,
        'PUT',
        '/api/v1/agents/default',
        { tools: { shell: { policy: 'approve' } } },
        alice,
      );
      expect(answer.status).toBe(400);
      expect(answer.body).toMatchObject({ error: 'invalid_definition' });
      expect(answer.body.message).toMatch(/agents\.default\.tools\.shell: bwrap is not installed/);
    } finally {
      await running.stop();
      await fresh.drop();
    }
  });
});

describe('operator-only actions', () => {
  it("syncs the model catalog and prunes billing rows for the operator's key only", async () => {
    for (const [path, body] of [
      ['/api/v1/admin/models/sync', {}],
      ['/api/v1/admin/prune', { older_than_days: 3650, rules: ['usage'] }],
    ] as const) {
      const tenantAdmin = await request(server.url, 'POST', path, body, alice);
      expect(tenantAdmin.status, path).toBe(403);
      expect(tenantAdmin.body.error).toBe('forbidden');
      expect((await request(server.url, 'POST', path, body, root)).status, path).toBe(200);
    }
    // The tenant's own journal is its admin's to prune.
    const own = await request(
      server.url,
      'POST',
      '/api/v1/admin/prune',
      { older_than_days: 3650 },
      alice,
    );
    expect(own.status).toBe(200);
    const me = await request(server.url, 'GET', '/api/v1/me', undefined, root);
    expect(me.body).toMatchObject({ user: 'root', operator: true });
    expect((await request(server.url, 'GET', '/api/v1/me', undefined, alice)).body.operator).toBe(
      false,
    );
  });

  it('serves /metrics to an operator key only (no key: 401, a tenant key: 403)', async () => {
    expect((await request(server.url, 'GET', '/metrics')).status).toBe(401);
    const tenantAdmin = await request(server.url, 'GET', '/metrics', undefined, alice);
    expect(tenantAdmin.status).toBe(403);
    expect(tenantAdmin.body.error).toBe('forbidden');
    const scraped = await request(server.url, 'GET', '/metrics', undefined, root);
    expect(scraped.status).toBe(200);
    expect(String(scraped.body)).toContain('parley_http_requests_total');
  });
});

describe('the configuration', () => {
  it('has absolute ceilings, checked names, and operator keys', () => {
    const refused: [Record<string, unknown>, string][] = [
      [
        { agents: { a: { tools: { clock: { timeout_ms: 9_999_999_999 } } } } },
        'agents.a.tools.clock.timeout_ms',
      ],
      [
        { agents: { a: { gate: { model: 'demo/x', topic: 't', timeout_ms: 86_400_001 } } } },
        'agents.a.gate.timeout_ms',
      ],
      [{ agents: { a: { budgets: { max_iterations: 1001 } } } }, 'agents.a.budgets.max_iterations'],
      [{ server: { keepalive_ms: 2 ** 31 } }, 'server.keepalive_ms'],
      [{ mcp_servers: { s: { command: 'x', call_timeout_ms: 86_400_001 } } }, 'mcp_servers.s'],
      [{ tools: { human_only: ['teleport'] } }, 'tools.human_only.0'],
      [{ tenancy: { agent_policy: { tools: ['orders__echo'] } } }, 'tenancy.agent_policy.tools.0'],
      [{ tenancy: { agent_policy: { tools: ['teleport'] } } }, 'tenancy.agent_policy.tools.0'],
      [
        { tenancy: { agent_policy: { max_timeout_ms: 86_400_001 } } },
        'tenancy.agent_policy.max_timeout_ms',
      ],
      [{ mcp_servers: { s: { command: 'x', tenants: 'all' } } }, 'mcp_servers.s'],
    ];
    for (const [file, key] of refused) {
      expect(() => compileConfig(file), JSON.stringify(file)).toThrow(key);
    }
    const config = compileConfig(
      {
        auth: {
          keys: [
            { key_env: 'K', tenant: 't', user: 'u', operator: true },
            { key_env: 'K2', tenant: 't', user: 'v' },
          ],
        },
        mcp_servers: { s: { command: 'x', tenants: '*' } },
        tools: { human_only: ['shell', 's__*'] },
      },
      { K: 'one', K2: 'two' },
    );
    expect(config.auth.keys.map((key) => key.principal.operator)).toEqual([true, false]);
    expect(config.mcpServers.s?.tenants).toBe('*');
    expect(config.tools.humanOnly).toEqual(['shell', 's__*']);
    expect(config.tenancy.agentPolicy).toMatchObject({
      maxTimeoutMs: 120_000,
      maxBytes: 1_048_576,
    });
  });
});
