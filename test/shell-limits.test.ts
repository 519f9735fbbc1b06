import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeStartup, startProcess } from '../src/cli/start.js';
import { compileConfig } from '../src/config/load.js';
import { createLogger } from '../src/log.js';
import { readEvents } from '../src/store/readEvents.js';
import { MemoryEffects } from '../src/tools/memory/effects.js';
import { runTool } from '../src/tools/registry.js';
import { sandboxHost } from '../src/tools/shell/host.js';
import { createShell } from '../src/tools/shell/index.js';
import { defaultLimits } from '../src/tools/shell/limits.js';
import { describeLimits } from '../src/tools/shell/startup.js';
import { workspaceDir } from '../src/tools/shell/workspace.js';
import { testConfig } from './support/config.js';
import { freshStorage } from './support/db.js';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';

/**
 * The shell's limits (docs/tools.md, "Limits"), tried for real in the bubblewrap sandbox:
 * a fork bomb, a memory hog, a CPU spin, a disk fill and an output flood each end at
 * their limit — a coded tool error (the flood: a truncated result) — and leave the
 * working directory as it was; through a running server, which stays healthy meanwhile:
 * /healthz answers and a turn in another session completes.
 */

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'parley-limits-'));
});
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

const shell = createShell();

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

type Outcome =
  | { ok: true; result: { exit_code: number; stdout: string; stderr: string; truncated: boolean } }
  | { ok: false; error: { code: string; message: string } };

async function run(command: string, sessionId: string, entry: Record<string, unknown> = {}) {
  return (await runTool(
    shell,
    { command },
    {
      signal: new AbortController().signal,
      timeoutMs: 60_000,
      scope: scope(sessionId),
      options: options(entry),
    },
  )) as Outcome;
}

function result(outcome: Outcome) {
  if (!outcome.ok) throw new Error(`expected a result, got ${JSON.stringify(outcome.error)}`);
  return outcome.result;
}

describe('shell limits: configuration', () => {
  it('has documented defaults, and limits.output_bytes with max_output_bytes as its alias', () => {
    expect(options()).toMatchObject({ limits: defaultLimits });
    expect(defaultLimits).toEqual({
      memoryMb: 512,
      cpuSeconds: 30,
      processes: 64,
      workspaceMb: 256,
      outputBytes: 65536,
    });
    expect(options({ max_output_bytes: 4096 })).toMatchObject({ limits: { outputBytes: 4096 } });
    expect(options({ limits: { output_bytes: 4096, memory_mb: 128 } })).toMatchObject({
      limits: { outputBytes: 4096, memoryMb: 128, processes: 64 },
    });
    expect(() => options({ max_output_bytes: 4096, limits: { output_bytes: 8192 } })).toThrow(
      /agents\.a\.tools\.shell\.limits\.output_bytes/,
    );
    expect(() => options({ limits: { memory_mb: 1 } })).toThrow(/limits\.memory_mb/);
    expect(() => options({ limits: { disk_mb: 1 } })).toThrow(/limits/);
    expect(options({ network: 'host' })).toMatchObject({ network: 'host' });
  });

  it('says what enforces each limit on this host', () => {
    const host = sandboxHost();
    // This machine (and CI) has writable cgroup v1 pids and memory hierarchies.
    expect(host.pidsCgroup).not.toBeNull();
    expect(host.memoryCgroup).not.toBeNull();
    const line = describeLimits(defaultLimits, host, true);
    expect(line).toContain('memory 512 MB (memory cgroup');
    expect(line).toContain('CPU 30 s per process (RLIMIT_CPU)');
    expect(line).toContain('processes 64 (pids cgroup)');
    expect(line).toContain('working directory 256 MB (tmpfs)');
    const without = describeLimits(
      defaultLimits,
      { ...host, pidsCgroup: null, memoryCgroup: null, root: true },
      false,
    );
    expect(without).toContain('memory 512 MB per process (RLIMIT_AS; no memory cgroup)');
    expect(without).toContain('processes NOT limited');
    expect(without).toContain('working directory NOT limited');
  });
});

describe('shell limits in the sandbox', () => {
  it('stops a fork bomb at the process limit', async () => {
    result(await run('echo kept > before.txt', 'F1'));
    const outcome = await run(':(){ :|:& };:; sleep 2; touch after.txt', 'F1', {
      limits: { processes: 16 },
    });
    expect(outcome).toMatchObject({ ok: false, error: { code: 'process_limit' } });
    expect(readdirSync(scope('F1').workspaceDir)).toEqual(['before.txt']);
    // Nothing of it is left running.
    expect(result(await run('ls /proc | grep -c "^[0-9]"', 'F1')).stdout.trim()).toMatch(/^[1-9]$/);
  });

  it('kills a memory hog at the memory limit', async () => {
    const outcome = await run(
      'touch partial.txt; head -c 400M /dev/zero | tail -c 400M > /dev/null',
      'M1',
      { limits: { memory_mb: 64 } },
    );
    expect(outcome).toMatchObject({ ok: false, error: { code: 'memory_limit' } });
    expect(existsSync(join(scope('M1').workspaceDir, 'partial.txt'))).toBe(false);
  });

  it('stops a CPU spin at its CPU time', async () => {
    const outcome = await run('while :; do :; done', 'C1', { limits: { cpu_seconds: 1 } });
    expect(outcome).toMatchObject({ ok: false, error: { code: 'cpu_limit' } });
  });

  it('keeps a disk fill within the working directory limit, off the host disk', async () => {
    const outcome = await run('head -c 1G /dev/zero > big', 'D1', { limits: { workspace_mb: 8 } });
    expect(outcome).toMatchObject({ ok: false, error: { code: 'workspace_limit' } });
    expect(readdirSync(scope('D1').workspaceDir)).toEqual([]);
    // A single allocation past the limit fails at once (RLIMIT_FSIZE, or the full tmpfs):
    // an ordinary failed command, which leaves at most the empty file it created.
    const allocated = result(
      await run('fallocate -l 20G huge', 'D1', { limits: { workspace_mb: 8 } }),
    );
    expect(allocated.exit_code).not.toBe(0);
    for (const name of readdirSync(scope('D1').workspaceDir)) {
      expect(statSync(join(scope('D1').workspaceDir, name)).blocks).toBe(0);
    }
    // The scratch file systems are capped the same way.
    const scratch = await run(
      'head -c 1G /dev/zero > /tmp/big; head -c 1G /dev/zero > /dev/shm/big; echo $?',
      'D1',
      {
        limits: { workspace_mb: 8 },
      },
    );
    expect(result(scratch).stdout.trim()).not.toBe('0');
  });

  it('keeps the files of a call within its limits, and refuses a saved directory over it', async () => {
    result(await run('head -c 3M /dev/zero > three', 'D2', { limits: { workspace_mb: 8 } }));
    expect(readdirSync(scope('D2').workspaceDir)).toEqual(['three']);
    // Lowered below what is saved: nothing runs, the files stay.
    const refused = await run('rm three', 'D2', { limits: { workspace_mb: 2 } });
    expect(refused).toMatchObject({ ok: false, error: { code: 'workspace_limit' } });
    expect(readdirSync(scope('D2').workspaceDir)).toEqual(['three']);
  });

  it('puts back the directory a server killed between the two renames of a save left aside', async () => {
    result(await run('echo one > kept.txt', 'R1'));
    const dir = scope('R1').workspaceDir;
    // The state after `rename(dir, old)` and before `rename(staging, dir)`.
    renameSync(dir, join(dirname(dir), `.${basename(dir)}.old-0123456789ab`));
    mkdirSync(join(dirname(dir), `.${basename(dir)}.new-0123456789ab`));
    expect(result(await run('cat kept.txt', 'R1')).stdout).toBe('one\n');
    expect(readdirSync(dirname(dir)).filter((name) => name.includes('R1'))).toEqual(['R1']);
  });

  it('cuts an output flood at the output limit: a truncated result, files kept', async () => {
    const flood = result(
      await run('touch written; yes parley', 'O1', { limits: { output_bytes: 2048 } }),
    );
    expect(flood.truncated).toBe(true);
    expect(Buffer.byteLength(flood.stdout + flood.stderr)).toBe(2048);
    expect(readdirSync(scope('O1').workspaceDir)).toEqual(['written']);
  });
});

describe('a server whose shell calls reach their limits', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      agents: {
        default: { model: 'demo/echo' },
        ops: {
          model: 'demo/echo',
          tools: {
            shell: {
              policy: 'allow',
              timeout_ms: 60_000,
              limits: {
                memory_mb: 64,
                cpu_seconds: 1,
                processes: 16,
                workspace_mb: 8,
                output_bytes: 2048,
              },
            },
          },
        },
      },
    });
  });
  afterAll(async () => {
    await server.close();
  });

  async function turn(agent: string, message: string, turnId: string) {
    const admitted = await request(server.url, 'POST', '/api/v1/chat/turns', {
      turn_id: turnId,
      agent,
      message,
    });
    expect(admitted.status, JSON.stringify(admitted.body)).toBe(202);
    const sessionId = admitted.body.session_id as string;
    return until(
      () => readEvents(server.db, sessionId, 0, 1000),
      (events) => events.some((event) => ['done', 'error'].includes(event.type)),
      `the end of ${turnId}`,
      120_000,
    ) as Promise<any[]>;
  }

  it('stays healthy and ends each call with its limit', async () => {
    const exhaustions: [string, string][] = [
      [':(){ :|:& };:; sleep 2', 'process_limit'],
      ['head -c 400M /dev/zero | tail -c 400M > /dev/null', 'memory_limit'],
      ['while :; do :; done', 'cpu_limit'],
      ['head -c 1G /dev/zero > big', 'workspace_limit'],
    ];
    const calls = exhaustions.map(([command], index) =>
      turn('ops', `/tool shell ${JSON.stringify({ command })}`, `limit_${index}`),
    );
    const flood = turn('ops', `/tool shell ${JSON.stringify({ command: 'yes' })}`, 'limit_flood');
    // Meanwhile: the server answers, and another session's turn completes.
    expect((await request(server.url, 'GET', '/healthz')).status).toBe(200);
    const other = await turn('default', 'are you still there', 'limit_other');
    expect(other.find((event) => event.type === 'done')?.final_message.content).toBe(
      'You said: are you still there',
    );
    for (const [index, events] of (await Promise.all(calls)).entries()) {
      const toolResult = events.find((event) => event.type === 'tool_result');
      expect(toolResult, exhaustions[index]?.[0]).toMatchObject({
        ok: false,
        error: { code: exhaustions[index]?.[1] },
      });
      expect(events.some((event) => event.type === 'done')).toBe(true);
    }
    const flooded = (await flood).find((event) => event.type === 'tool_result');
    expect(flooded).toMatchObject({ ok: true, result: { truncated: true } });
    expect((await request(server.url, 'GET', '/healthz')).status).toBe(200);
  });
});

describe('start-up with limits and the network', () => {
  const start = async (shell: Record<string, unknown>, slirp4netns?: string) => {
    const fresh = await freshStorage();
    const config = testConfig(fresh.storage, { agents: { ops: { tools: { shell } } } });
    try {
      const running = await startProcess(
        config,
        { api: false, worker: true },
        createLogger({ level: 'silent' }),
        slirp4netns ? { slirp4netns } : {},
      );
      const lines = describeStartup(config, running, 'serve');
      await running.stop();
      return lines.join('\n');
    } finally {
      await fresh.drop();
    }
  };

  it('says which network each agent has and what enforces each limit', async () => {
    const isolated = await start({ network: true, limits: { processes: 32 } });
    expect(isolated).toContain(
      'shell (agent ops): bubblewrap sandbox, own network (slirp4netns, no host loopback)',
    );
    expect(isolated).toContain('processes 32 (pids cgroup)');
    expect(isolated).toContain('memory 512 MB (memory cgroup');
    expect(await start({ network: 'host' })).toContain("the HOST's network, loopback included");
  });

  it('fails for network: true where slirp4netns cannot run, naming network: host', async () => {
    await expect(start({ network: true }, 'slirp4netns-not-installed')).rejects.toThrow(
      /agents\.ops\.tools\.shell\.network: .*slirp4netns.*network: host/,
    );
  });
});
