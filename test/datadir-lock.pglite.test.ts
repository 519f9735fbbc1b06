import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openPglite } from '../src/store/pglite.js';
import { until } from './support/poll.js';
import { startParley, stopAllProcesses } from './support/processes.js';
import { copyPgliteTemplate } from './support/template.js';

// The embedded data directory's lock (parley.lock; Linux, where /proc tells a process's
// state and start time): a process that is gone — reaped,
// a zombie nobody reaped yet, or a pid now used by another process — never blocks a start,
// and of two starts racing on one directory exactly one wins.

const cleanup: (() => void)[] = [];
afterEach(async () => {
  await stopAllProcesses();
  for (const clean of cleanup.splice(0).reverse()) clean();
});

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'parley-lock-'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  copyPgliteTemplate(dir);
  return dir;
}

function processStat(pid: number): { state: string; start: string } | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0] as string, start: fields[19] as string };
  } catch {
    return null;
  }
}

/** A `sleep` that never reaps its finished child: that child stays a zombie (state Z). */
async function zombie(): Promise<number> {
  const parent: ChildProcess = spawn('bash', ['-c', 'sleep 0.2 & echo $!; exec sleep 60'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  cleanup.push(() => parent.kill('SIGKILL'));
  const line = await new Promise<string>((resolve) =>
    parent.stdout?.once('data', (chunk: Buffer) => resolve(chunk.toString('utf8'))),
  );
  const pid = Number(line.trim());
  await until(
    async () => processStat(pid)?.state,
    (state) => state === 'Z',
    'the child to be a zombie',
  );
  return pid;
}

function live(): ChildProcess {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  cleanup.push(() => child.kill('SIGKILL'));
  return child;
}

const lockOf = (dir: string) => readFileSync(join(dir, 'parley.lock'), 'utf8');

describe('the data directory lock', () => {
  it('takes over a lock whose process is a zombie, in either lock format', async () => {
    const pid = await zombie();
    // `kill(pid, 0)` succeeds on a zombie: the process looks alive by that test alone.
    expect(() => process.kill(pid, 0)).not.toThrow();
    const start = processStat(pid)?.start as string;
    for (const content of [`${pid}`, `${pid}\n${start}\n`]) {
      const dir = dataDir();
      writeFileSync(join(dir, 'parley.lock'), content);
      const db = await openPglite(dir);
      expect(lockOf(dir).split('\n')[0]).toBe(String(process.pid));
      await db.close();
      expect(existsSync(join(dir, 'parley.lock'))).toBe(false);
      expect(readdirSync(dir).filter((name) => name.startsWith('parley.lock'))).toEqual([]);
    }
  });

  it('takes over a lock whose pid now belongs to another process, and refuses a live owner', async () => {
    const other = live();
    const stat = processStat(other.pid as number) as { start: string };
    const dir = dataDir();
    // The lock's start time is not the running process's: that pid was recycled.
    writeFileSync(join(dir, 'parley.lock'), `${other.pid}\n${Number(stat.start) - 1}\n`);
    const db = await openPglite(dir);
    await db.close();
    // The same pid with its own start time is a live owner.
    writeFileSync(join(dir, 'parley.lock'), `${other.pid}\n${stat.start}\n`);
    await expect(openPglite(dir)).rejects.toThrow(`is in use by process ${other.pid}`);
    expect(lockOf(dir)).toBe(`${other.pid}\n${stat.start}\n`);
  });

  it('takes over the lock of a process that exited', async () => {
    const gone = spawn('true');
    await new Promise((resolve) => gone.once('exit', resolve));
    const dir = dataDir();
    writeFileSync(join(dir, 'parley.lock'), `${gone.pid}\n`);
    const db = await openPglite(dir);
    expect(lockOf(dir).split('\n')[0]).toBe(String(process.pid));
    await db.close();
  });

  it('lets exactly one of two racing `parley serve` start, with or without a stale lock', async () => {
    const stale = await zombie();
    for (const staleLock of [false, true]) {
      const dir = dataDir();
      if (staleLock) writeFileSync(join(dir, 'parley.lock'), `${stale}\n`);
      const starts = await Promise.allSettled([
        startParley('serve', { dataDir: dir }),
        startParley('serve', { dataDir: dir }),
      ]);
      const won = starts.flatMap((start) => (start.status === 'fulfilled' ? [start.value] : []));
      const lost = starts.flatMap((start) => (start.status === 'rejected' ? [start.reason] : []));
      expect(won).toHaveLength(1);
      expect(lost).toHaveLength(1);
      const winner = won[0] as Awaited<ReturnType<typeof startParley>>;
      expect(String(lost[0])).toContain(`is in use by process ${winner.pid}`);
      expect(lockOf(dir).split('\n')[0]).toBe(String(winner.pid));
      winner.kill('SIGTERM');
      expect((await winner.waitForExit()).code).toBe(0);
      expect(existsSync(join(dir, 'parley.lock'))).toBe(false);
    }
  });
});
