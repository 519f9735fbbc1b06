import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshStorage } from './support/db.js';
import { request, startTestServer, type TestServer } from './support/server.js';
import { SseClient } from './support/sse.js';

/** Runs the real, built `parley` command (test/support/build.ts builds it first). */
function parley(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['dist/cli/main.js', ...args], {
      env: { ...process.env, PARLEY_CONFIG: '', DATABASE_URL: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

describe('parley CLI', () => {
  it('prints usage and rejects unknown commands', async () => {
    const help = await parley(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('parley serve');
    const unknown = await parley(['dance']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown command');
  });

  it('lists and shows sessions through the API', async () => {
    const admitted = await request(server.url, 'POST', '/api/v1/chat/turns', {
      turn_id: 'cli_1',
      message: 'hi',
    });
    const sessionId = admitted.body.session_id;
    const list = await parley(['sessions', 'list', '--url', server.url]);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain(sessionId);
    expect(list.stdout).toContain('STATE');
    const show = await parley(['sessions', 'show', sessionId, '--url', server.url]);
    expect(show.code).toBe(0);
    expect(JSON.parse(show.stdout)).toMatchObject({ session_id: sessionId, agent: 'default' });
    const missing = await parley(['sessions', 'show', 'nope', '--url', server.url]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('session_not_found');
    const notParked = await parley(['sessions', 'unpark', sessionId, '--url', server.url]);
    expect(notParked.code).toBe(1);
    expect(notParked.stderr).toContain('session_not_parked');
  });

  it('prunes old events so that old cursors answer 410', async () => {
    const admitted = await request(server.url, 'POST', '/api/v1/chat/turns', {
      turn_id: 'cli_2',
      message: 'old',
    });
    const stream = await SseClient.open(server.url, admitted.body.session_id);
    await stream.waitForType('done');
    stream.close();
    const usage = await parley(['prune', '--url', server.url]);
    expect(usage.code).toBe(2);
    const pruned = await parley(['prune', '--older-than-seconds', '0', '--url', server.url]);
    expect(pruned.code).toBe(0);
    expect(pruned.stdout).toMatch(/pruned \d+ events in \d+ sessions/);
    const old = await SseClient.open(server.url, admitted.body.session_id, { after: 0 });
    expect(old.status).toBe(410);
  });

  it('says clearly when no server is reachable', async () => {
    const result = await parley(['sessions', 'list', '--url', 'http://127.0.0.1:1']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('cannot reach a Parley server');
  });

  it('refuses `parley api` and `parley worker` on embedded storage', async () => {
    for (const result of await Promise.all([parley(['api']), parley(['worker'])])) {
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('needs PostgreSQL');
    }
  });

  it('migrates a fresh database, then reports it up to date', async () => {
    // On PGlite a data directory with nothing in it: the first start's initdb too.
    const fresh = await freshStorage({ empty: true });
    const env: Record<string, string> = fresh.storage.url
      ? { DATABASE_URL: fresh.storage.url }
      : { PARLEY_DATA_DIR: join(fresh.storage.dataDir, 'new') };
    try {
      const first = await parley(['migrate'], env);
      expect(first.stderr).toBe('');
      expect(first.code).toBe(0);
      expect(first.stdout).toContain('applied 0001_journal.sql');
      const second = await parley(['migrate'], env);
      expect(second.stdout).toContain('is up to date');
    } finally {
      await fresh.drop();
    }
  });

  it('serve prints where it listens, storage and mode, and stops cleanly on SIGTERM', async () => {
    const fresh = await freshStorage();
    const env: Record<string, string> = fresh.storage.url
      ? { DATABASE_URL: fresh.storage.url }
      : { PARLEY_DATA_DIR: fresh.storage.dataDir };
    const child = spawn(process.execPath, ['dist/cli/main.js', 'serve'], {
      env: {
        ...process.env,
        PARLEY_CONFIG: '',
        DATABASE_URL: '',
        PARLEY_PORT: '0',
        PARLEY_LOG_LEVEL: 'warn',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    try {
      const deadline = Date.now() + 120_000;
      while (!stdout.includes('worker claiming') && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(stdout).toMatch(/parley serve: listening on http:\/\/127\.0\.0\.1:\d+/);
      expect(stdout).toContain(
        fresh.storage.url ? 'storage PostgreSQL' : 'storage embedded PGlite',
      );
      expect(stdout).toContain('mode dev');
      const url = /listening on (\S+)/.exec(stdout)?.[1] as string;
      expect((await request(url, 'GET', '/readyz')).status).toBe(200);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(stdout).toContain('parley serve: stopped');
    } finally {
      child.kill('SIGKILL');
      await fresh.drop();
    }
  }, 180_000);

  it('refuses to serve beyond loopback without API keys', async () => {
    const result = await parley(['serve'], {
      PARLEY_HOST: '0.0.0.0',
      PARLEY_DATA_DIR: '/tmp/parley-never-used',
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('without API keys');
  });

  it('exits non-zero when its port is taken, leaving the data directory free', async () => {
    // The API of this file's server holds its port; a second process asks for the same one.
    const port = new URL(server.url).port;
    const fresh = await freshStorage();
    try {
      const env: Record<string, string> = fresh.storage.url
        ? { DATABASE_URL: fresh.storage.url }
        : { PARLEY_DATA_DIR: fresh.storage.dataDir };
      const taken = await parley(['serve'], { PARLEY_PORT: port, ...env });
      expect(taken.code).toBe(1);
      expect(taken.stderr).toContain('EADDRINUSE');
      // Nothing kept running: the data directory can be opened again at once.
      const again = await parley(['migrate'], env);
      expect(again.code).toBe(0);
    } finally {
      await fresh.drop();
    }
  });

  it('fails at start on an invalid configuration, naming the key', async () => {
    const result = await parley(['serve'], { PARLEY_PORT: 'eighty' });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('PARLEY_PORT');
  });
});
