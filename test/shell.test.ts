import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileConfig } from '../src/config/load.js';
import { MemoryEffects } from '../src/tools/memory/effects.js';
import { runTool } from '../src/tools/registry.js';
import { createShell } from '../src/tools/shell/index.js';
import { checkBwrap } from '../src/tools/shell/sandbox.js';
import { listWorkspaceFiles, workspaceDir } from '../src/tools/shell/workspace.js';
import { until } from './support/poll.js';

// Real processes in a real bubblewrap sandbox (Debian's `bubblewrap`, installed by
// .ci/run). The secret is set in this process's own environment, as a server's would be.

const secret = `parley-secret-${process.pid}-b7e1c9`;
process.env.PARLEY_SHELL_TEST_SECRET = secret;
process.env.PARLEY_SHELL_TEST_SHARED = 'shared-value';

let root: string;
let server: Server;
let port: number;
let requests = 0;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'parley-shell-'));
  server = createServer((_request, response) => {
    requests += 1;
    response.end('hello');
  });
  // Every address: the sandbox's egress is tried on the host's non-loopback address.
  await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  rmSync(root, { recursive: true, force: true });
});

const shell = createShell();

/** This machine's first non-loopback IPv4 address: "the outside" a sandbox may reach. */
function externalAddress(): string {
  const address = Object.values(networkInterfaces())
    .flat()
    .find((entry) => entry && entry.family === 'IPv4' && !entry.internal);
  if (!address) throw new Error('this test needs a non-loopback IPv4 interface');
  return address.address;
}

function options(entry: Record<string, unknown> = {}) {
  return compileConfig({ agents: { a: { tools: { shell: entry } } } }).agents.a!.tools.shell!
    .options;
}

function scope(sessionId: string) {
  return {
    tenant: 'acme',
    agent: 'a',
    user: 'alice',
    sessionId,
    callId: 'call_1',
    workspaceDir: workspaceDir(join(root, 'workspaces'), 'acme', sessionId),
    memory: new MemoryEffects(),
  };
}

async function run(
  command: string,
  sessionId = 'S1',
  entry: Record<string, unknown> = {},
  timeoutMs = 20_000,
) {
  const outcome = await runTool(
    shell,
    { command },
    {
      signal: new AbortController().signal,
      timeoutMs,
      scope: scope(sessionId),
      options: options(entry),
    },
  );
  return outcome as
    | {
        ok: true;
        result: { exit_code: number; stdout: string; stderr: string; truncated: boolean };
      }
    | { ok: false; error: { code: string; message: string } };
}

function result(outcome: Awaited<ReturnType<typeof run>>) {
  if (!outcome.ok) throw new Error(`expected a result, got ${JSON.stringify(outcome.error)}`);
  return outcome.result;
}

describe('shell in bubblewrap', () => {
  it('works on this machine', () => {
    expect(checkBwrap(root)).toBeNull();
    expect(checkBwrap(root, 'bwrap-not-installed')).toContain('not installed');
  });

  it("keeps files in the session's working directory across calls, and nowhere else", async () => {
    expect(result(await run('echo remembered > notes.txt && pwd && echo $HOME'))).toMatchObject({
      exit_code: 0,
      stdout: '/workspace\n/workspace\n',
    });
    expect(result(await run('cat notes.txt')).stdout).toBe('remembered\n');
    expect(readFileSync(join(scope('S1').workspaceDir, 'notes.txt'), 'utf8')).toBe('remembered\n');
    // Another session has its own directory.
    expect(result(await run('ls -A', 'S2')).stdout).toBe('');
  });

  it('cannot write outside its directory', async () => {
    const outside = join(root, 'escaped');
    const attempts = [
      'touch /usr/escaped',
      'touch /escaped',
      'touch ../escaped',
      'touch /etc/escaped',
      'touch /proc/escaped',
    ];
    for (const command of attempts) {
      expect(result(await run(command)).exit_code, command).not.toBe(0);
    }
    // The host's path does not exist inside; recreating it lands in the private /tmp.
    expect(result(await run(`ls ${root}`)).exit_code).not.toBe(0);
    await run(`mkdir -p ${root} && touch ${outside}`);
    // /tmp is writable but private to the command and gone afterwards.
    expect(result(await run('echo x > /tmp/t && cat /tmp/t')).stdout).toBe('x\n');
    expect(result(await run('ls -A /tmp')).stdout).toBe('');
    expect(existsSync(outside)).toBe(false);
    expect(readdirSync(root).sort()).toEqual(['workspaces']);
  });

  it("cannot reach the network unless the agent allows it, nor ever the host's loopback but with network: host", async () => {
    const connect = (address: string) =>
      `timeout 10 bash -c 'exec 3<>/dev/tcp/${address}/${port} && printf "GET / HTTP/1.0\\r\\n\\r\\n" >&3 && cat <&3'`;
    const cut = result(await run(connect('127.0.0.1')));
    expect(cut.exit_code).not.toBe(0);
    expect(requests).toBe(0);
    // network: true is the sandbox's own network: the host's loopback is not reachable,
    // neither as 127.0.0.1 (the sandbox's own loopback) nor through slirp4netns's gateway.
    for (const address of ['127.0.0.1', '10.0.2.2']) {
      const refused = result(await run(connect(address), 'S1', { network: true }));
      expect(refused.stdout, address).not.toContain('hello');
    }
    expect(requests).toBe(0);
    // The positive control: the outside is reachable — the host's own address on its
    // network interface stands for it here.
    const open = result(await run(connect(externalAddress()), 'S1', { network: true }));
    expect(open.stdout).toContain('hello');
    expect(requests).toBe(1);
    // network: host shares the host's network, its loopback included: chosen explicitly.
    const shared = result(await run(connect('127.0.0.1'), 'S1', { network: 'host' }));
    expect(shared.stdout).toContain('hello');
    expect(requests).toBe(2);
  });

  it("cannot see a secret from the server's environment", async () => {
    const probe =
      'env; cat /proc/1/environ /proc/self/environ; for p in /proc/[0-9]*; do cat $p/environ; done; ' +
      'ls /proc; cat /proc/1/cmdline';
    const { stdout } = result(
      await run(`${probe} 2>&1`, 'S1', { env: ['PARLEY_SHELL_TEST_SHARED'] }),
    );
    expect(stdout).toContain('PARLEY_SHELL_TEST_SHARED=shared-value');
    expect(stdout).not.toContain(secret);
    // Only the sandbox's own processes are visible, not the server (this test runner).
    expect(stdout).not.toContain(`\n${process.pid}\n`);
    const env = result(await run('env | cut -d= -f1 | sort'))
      .stdout.trim()
      .split('\n');
    expect(env.filter((name) => !['PWD', 'SHLVL', '_'].includes(name))).toEqual([
      'HOME',
      'LANG',
      'PATH',
    ]);
  });

  it('kills the command and everything it started at its timeout', async () => {
    const marker = `4242.${process.pid}`;
    const started = run(`sleep ${marker}1 & sleep ${marker}2; echo never`, 'S1', {}, 800);
    const outcome = await started;
    expect(outcome).toMatchObject({ ok: false, error: { code: 'timeout' } });
    expect((outcome as { error: { message: string } }).error.message).toContain('killed');
    const alive = () =>
      readdirSync('/proc')
        .filter((entry) => /^\d+$/.test(entry))
        .filter((pid) => {
          try {
            return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker);
          } catch {
            return false;
          }
        });
    await until(alive, (pids) => pids.length === 0, 'the sleeps to be gone', 10_000);
  });

  it('caps the output and stops the command there', async () => {
    const capped = result(await run('yes parley', 'S1', { max_output_bytes: 2048 }));
    expect(capped.truncated).toBe(true);
    expect(Buffer.byteLength(capped.stdout + capped.stderr)).toBe(2048);
    expect(capped.stdout.startsWith('parley\nparley\n')).toBe(true);
  });

  it('reports a failing command as a result with its exit code and stderr', async () => {
    expect(result(await run('echo oops >&2; exit 3'))).toMatchObject({
      exit_code: 3,
      stdout: '',
      stderr: 'oops\n',
      truncated: false,
    });
  });

  it('stays sandboxed when a caller passes no options (only an explicit none disables it)', async () => {
    const outcome = await runTool(
      shell,
      { command: 'id -u; ls /' },
      {
        signal: new AbortController().signal,
        timeoutMs: 20_000,
        scope: scope('S1'),
      },
    );
    expect(result(outcome as Awaited<ReturnType<typeof run>>).stdout).toMatch(
      /^65534\n[\s\S]*workspace/,
    );
  });

  it('refuses to run outside a turn', async () => {
    const outcome = await runTool(
      shell,
      { command: 'true' },
      {
        signal: new AbortController().signal,
        timeoutMs: 1000,
        options: options(),
      },
    );
    expect(outcome).toMatchObject({ ok: false, error: { code: 'tool_failed' } });
  });
});

describe('shell with sandbox: none', () => {
  it('runs in the working directory with a fresh environment (and nothing more)', async () => {
    const { stdout } = result(await run('pwd; env', 'S3', { sandbox: 'none' }));
    expect(stdout.split('\n')[0]).toBe(scope('S3').workspaceDir);
    expect(stdout).not.toContain(secret);
  });
});

describe('workspaces', () => {
  it('keep tenant and session names inside the root', () => {
    const base = '/srv/ws';
    expect(workspaceDir(base, '../..', '..')).toBe('/srv/ws/%2E%2E%2F%2E%2E/%2E%2E');
    expect(workspaceDir(base, 'acme', '01J')).toBe('/srv/ws/acme/01J');
  });

  it('list files recursively, sizes and links without following them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'parley-list-'));
    try {
      const made =
        'mkdir sub && printf abc > sub/a.txt && printf hello > b.txt && ln -s /etc/passwd link';
      expect(result(await run(made, 'S4')).exit_code).toBe(0);
      const listed = await listWorkspaceFiles(scope('S4').workspaceDir);
      expect(listed.truncated).toBe(false);
      const sizes = listed.files.map(({ path, type, size }) => [
        path,
        type,
        type === 'file' ? size : 0,
      ]);
      expect(sizes).toEqual([
        ['b.txt', 'file', 5],
        ['link', 'symlink', 0],
        ['sub', 'directory', 0],
        ['sub/a.txt', 'file', 3],
      ]);
      expect(await listWorkspaceFiles(join(dir, 'missing'))).toEqual({
        files: [],
        truncated: false,
      });
      expect((await listWorkspaceFiles(scope('S4').workspaceDir, 2)).truncated).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
