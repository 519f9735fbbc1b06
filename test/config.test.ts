import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { assertBindAllowed } from '../src/api/principal.js';
import { compileConfig, ConfigError, loadConfig } from '../src/config/load.js';

describe('configuration (CONFIG.md)', () => {
  it('runs on built-in defaults: embedded storage, dev mode on loopback, agent default on demo', () => {
    const config = compileConfig({});
    expect(config.server).toMatchObject({ host: '127.0.0.1', port: 8080 });
    expect(config.storage).toMatchObject({ dataDir: './.parley', url: null });
    expect(config.runtime).toMatchObject({
      leaseTtlMs: 15000,
      heartbeatMs: 5000,
      maxParallelTurns: 8,
      parkAfterAttempts: 5,
    });
    expect(config.auth.mode).toBe('dev');
    expect(config.agents.default?.model).toEqual({ provider: 'demo', modelId: 'echo' });
    expect(config.demo.delayMs).toBe(20);
  });

  it('applies the environment overrides CONFIG.md lists', () => {
    const config = compileConfig(
      {},
      {
        PARLEY_HOST: '127.0.0.2',
        PARLEY_PORT: '9000',
        PARLEY_DATA_DIR: '/tmp/x',
        DATABASE_URL: 'postgres://a@b/c',
        PARLEY_LEASE_TTL_MS: '20000',
        PARLEY_DEMO_DELAY_MS: '0',
        PARLEY_EMBEDDED_SHARED_BUFFERS_MB: '32',
      },
    );
    expect(config.server).toMatchObject({ host: '127.0.0.2', port: 9000 });
    expect(config.storage).toMatchObject({
      dataDir: '/tmp/x',
      url: 'postgres://a@b/c',
      embeddedSharedBuffersMb: 32,
    });
    expect(compileConfig({}).storage.embeddedSharedBuffersMb).toBe(128);
    expect(compileConfig({}).storage.embeddedVacuumIntervalMs).toBe(60_000);
    expect(
      compileConfig({ storage: { embedded_vacuum_interval_ms: 0 } }).storage
        .embeddedVacuumIntervalMs,
    ).toBe(0);
    expect(config.runtime.leaseTtlMs).toBe(20000);
    expect(config.demo.delayMs).toBe(0);
  });

  it('derives the heartbeat from the lease ttl unless it is set (a third of it)', () => {
    expect(compileConfig({}, { PARLEY_LEASE_TTL_MS: '3000' }).runtime.heartbeatMs).toBe(1000);
    expect(compileConfig({ runtime: { lease_ttl_ms: 600_000 } }).runtime.heartbeatMs).toBe(200_000);
    const explicit = compileConfig({ runtime: { lease_ttl_ms: 3000, heartbeat_ms: 500 } });
    expect(explicit.runtime.heartbeatMs).toBe(500);
  });

  it('keeps agents, providers and pricing free of prototype keys', () => {
    const config = compileConfig({});
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      expect(config.agents[name]).toBeUndefined();
      expect(config.providers[name]).toBeUndefined();
      expect(config.pricing[name]).toBeUndefined();
    }
  });

  it.each([
    [{ server: { port: 'eighty' } }, 'server.port'],
    [{ runtime: { lease_ttl_ms: -1 } }, 'runtime.lease_ttl_ms'],
    [{ runtime: { leese_ttl_ms: 1 } }, 'runtime'],
    [{ agents: { a: { model: 'nope' } } }, 'agents.a.model'],
    [{ agents: { a: { model: 'ghost/x' } } }, 'agents.a.model'],
    [{ agents: { a: { tools: { clock: 'maybe' } } } }, 'agents.a.tools.clock'],
    [{ runtime: { lease_ttl_ms: 1000, heartbeat_ms: 2000 } }, 'runtime.heartbeat_ms'],
    [
      { limits: { remote_images: { allow_hosts: ['http://cdn.example.com'] } } },
      'limits.remote_images.allow_hosts.0',
    ],
  ])('rejects %j naming the key %s', (raw, key) => {
    expect(() => compileConfig(raw)).toThrow(ConfigError);
    expect(() => compileConfig(raw)).toThrow(key);
  });

  it("compiles an approval's escalation chain and reminder, the tool's over the agent's", () => {
    const config = compileConfig({
      agents: {
        default: {
          escalate: [{ after_ms: 1000, to: 'role:lead' }],
          remind_before_ms: 500,
          tools: { calculator: { policy: 'approve', escalate: [{ after_ms: 10, to: 'user:x' }] } },
        },
      },
    });
    const agent = config.agents.default;
    expect(agent?.escalate).toEqual([{ afterMs: 1000, to: 'role:lead' }]);
    expect(agent?.remindBeforeMs).toBe(500);
    expect(agent?.tools.calculator).toMatchObject({
      escalate: [{ afterMs: 10, to: 'user:x' }],
      remindBeforeMs: null,
    });
    const bad = (escalate: unknown) => () => compileConfig({ agents: { default: { escalate } } });
    expect(bad([{ after_ms: 10, to: 'agent:bot' }])).toThrow('agents.default.escalate');
    expect(
      bad([
        { after_ms: 20, to: 'role:a' },
        { after_ms: 10, to: 'role:b' },
      ]),
    ).toThrow('increasing after_ms');
  });

  it('compiles the deadlines of questions and budget extensions, absent by default', () => {
    const config = compileConfig({
      agents: {
        default: { question_timeout_ms: 60_000, budgets: { extension_timeout_ms: 120_000 } },
        waits: {},
      },
    });
    expect(config.agents.default?.questionTimeoutMs).toBe(60_000);
    expect(config.agents.default?.budgets.extensionTimeoutMs).toBe(120_000);
    expect(config.agents.waits?.questionTimeoutMs).toBeNull();
    expect(config.agents.waits?.budgets.extensionTimeoutMs).toBeNull();
    expect(() => compileConfig({ agents: { a: { question_timeout_ms: 0 } } })).toThrow(
      'agents.a.question_timeout_ms',
    );
    expect(() =>
      compileConfig({ agents: { a: { budgets: { extension_timeout_ms: 1.5 } } } }),
    ).toThrow('agents.a.budgets.extension_timeout_ms');
  });

  it('rejects a bad environment override by name', () => {
    expect(() => compileConfig({}, { PARLEY_PORT: 'x' })).toThrow('PARLEY_PORT');
  });

  it('never echoes a secret in its errors', () => {
    const secret = 'sk-live-THIS-IS-SECRET';
    const attempts: (() => unknown)[] = [
      () => compileConfig({ auth: { keys: [{ key_sha256: secret, tenant: 't', user: 'u' }] } }),
      () =>
        compileConfig({ providers: { p: { kind: 'openai', api_key_env: 'X', extra: secret } } }),
      () =>
        compileConfig(
          { auth: { keys: [{ key_env: 'K', tenant: 't', user: 'u', oops: secret }] } },
          { K: secret },
        ),
    ];
    for (const attempt of attempts) {
      let message = '';
      try {
        attempt();
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message.length).toBeGreaterThan(0);
      expect(message).not.toContain(secret);
    }
  });

  it('keeps only the hash of an API key from the environment', () => {
    const config = compileConfig(
      {
        auth: {
          keys: [
            { key_env: 'PARLEY_KEY_ALICE', tenant: 'acme', user: 'alice', roles: ['reviewer'] },
          ],
        },
      },
      { PARLEY_KEY_ALICE: 'alice-secret-key' },
    );
    expect(config.auth.mode).toBe('keys');
    expect(JSON.stringify(config)).not.toContain('alice-secret-key');
    expect(config.auth.keys[0]?.principal).toEqual({
      tenant: 'acme',
      user: 'alice',
      roles: ['reviewer'],
      operator: false,
    });
    expect(() =>
      compileConfig({ auth: { keys: [{ key_env: 'MISSING', tenant: 't', user: 'u' }] } }, {}),
    ).toThrow('auth.keys.0.key_env');
  });

  it('refuses a tool that does not exist, naming it', () => {
    expect(() => compileConfig({ agents: { a: { tools: { teleport: 'allow' } } } })).toThrow(
      'agents.a.tools.teleport',
    );
    expect(() =>
      compileConfig({
        agents: { a: { tools: { clock: 'allow', calculator: 'approve', ask_user: 'allow' } } },
      }),
    ).not.toThrow();
  });

  it('reads YAML from --config, PARLEY_CONFIG or ./parley.yaml, and names the file on a syntax error', () => {
    const dir = mkdtempSync(join(tmpdir(), 'parley-config-'));
    writeFileSync(join(dir, 'parley.yaml'), 'server:\n  port: 9123\n');
    expect(loadConfig({ cwd: dir, env: {} }).server.port).toBe(9123);
    writeFileSync(join(dir, 'other.yaml'), '{"server": {"port": 9124}}');
    expect(
      loadConfig({ cwd: dir, env: { PARLEY_CONFIG: join(dir, 'other.yaml') } }).server.port,
    ).toBe(9124);
    expect(loadConfig({ cwd: dir, env: {}, path: join(dir, 'other.yaml') }).server.port).toBe(9124);
    writeFileSync(join(dir, 'bad.yaml'), 'server: [\n');
    expect(() => loadConfig({ cwd: dir, env: {}, path: join(dir, 'bad.yaml') })).toThrow(
      'bad.yaml',
    );
    expect(() => loadConfig({ cwd: dir, env: {}, path: join(dir, 'missing.yaml') })).toThrow(
      'missing.yaml',
    );
  });

  it('refuses to listen beyond loopback without API keys, judging by the resolved address', async () => {
    const dev = (host: string) => compileConfig({ server: { host } });
    await expect(assertBindAllowed(dev('0.0.0.0'))).rejects.toThrow('without API keys');
    await expect(assertBindAllowed(dev('127.0.0.1'))).resolves.toBeUndefined();
    await expect(assertBindAllowed(dev('127.0.0.2'))).resolves.toBeUndefined();
    await expect(assertBindAllowed(dev('::1'))).resolves.toBeUndefined();
    await expect(assertBindAllowed(dev('[::1]'))).resolves.toBeUndefined();
    await expect(assertBindAllowed(dev('localhost'))).resolves.toBeUndefined();
    // A name is judged by what it resolves to, not by how it starts.
    const dns = async (host: string) =>
      ({ '127.evil.example': ['203.0.113.5'], 'mixed.example': ['127.0.0.1', '10.0.0.1'] })[host] ??
      [];
    await expect(assertBindAllowed(dev('127.evil.example'), dns)).rejects.toThrow(
      'without API keys',
    );
    await expect(assertBindAllowed(dev('mixed.example'), dns)).rejects.toThrow('without API keys');
    const failing = async () => {
      throw new Error('ENOTFOUND');
    };
    await expect(assertBindAllowed(dev('nowhere.invalid'), failing)).rejects.toThrow(
      'cannot resolve',
    );
    const withKeys = compileConfig(
      { server: { host: '0.0.0.0' }, auth: { keys: [{ key_env: 'K', tenant: 't', user: 'u' }] } },
      { K: 'k' },
    );
    await expect(assertBindAllowed(withKeys)).resolves.toBeUndefined();
  });
});
