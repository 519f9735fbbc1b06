import { createHash } from 'node:crypto';
import { linkSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The embedded data directory's lock: `parley.lock` names the process that owns the
 * directory (its pid, and its start time where the system tells it, so that a recycled
 * pid is not mistaken for the owner).
 *
 * Taking it is atomic: the lock is a hard link to a file this process wrote in full
 * beforehand, and `link` fails if the name exists (O_EXCL semantics, and no reader ever
 * sees a half-written lock). A lock whose process is gone — no such process, a zombie
 * (`Z`) or a dead one (`X`) in /proc, or another process with the same pid — is stale.
 * Starters that find the same stale lock remove it one at a time: each first creates a
 * marker named after the stale lock's contents (again with `link`), then removes the lock
 * only if it still holds those contents, so a starter that read it late never removes
 * the lock that the winner has taken since. Then they all race on `link` again: exactly
 * one wins, and the others find a live owner.
 */
export function lockDataDir(dataDir: string): () => void {
  const lockPath = join(dataDir, 'parley.lock');
  const mine = `${process.pid}\n${processStart(process.pid) ?? ''}\n`;
  const release = () => {
    if (readOrNull(lockPath) === mine) rmSync(lockPath, { force: true });
  };
  const draft = join(dataDir, `parley.lock.${process.pid}`);
  writeFileSync(draft, mine);
  try {
    for (let attempt = 0; attempt < 50; attempt++) {
      if (linked(draft, lockPath)) return release;
      const found = readOrNull(lockPath);
      if (found === null) continue;
      // This very process took it before (a store opened again after a close).
      if (found === mine) return release;
      const holder = parseHolder(found);
      // Our own pid in a lock we did not write: a dead process whose pid we now have.
      if (holder !== null && holder.pid !== process.pid && isAlive(holder)) {
        throw new Error(
          `data directory ${dataDir} is in use by process ${holder.pid}; embedded storage allows one process (use PostgreSQL for several)`,
        );
      }
      removeStale(lockPath, found, draft);
    }
    throw new Error(`could not take the lock of data directory ${dataDir}: try again`);
  } finally {
    rmSync(draft, { force: true });
  }
}

interface Holder {
  pid: number;
  /** The process's start time in clock ticks since boot; null in a lock that has none. */
  start: string | null;
}

function parseHolder(content: string): Holder | null {
  const [pidLine, startLine] = content.split('\n');
  const pid = Number(pidLine?.trim());
  if (!Number.isInteger(pid) || pid <= 0) return null;
  const start = startLine?.trim() ?? '';
  return { pid, start: start === '' ? null : start };
}

/** Removes the stale lock holding `stale`, unless another starter is doing so right now. */
function removeStale(lockPath: string, stale: string, draft: string): void {
  const marker = `${lockPath}.stale-${createHash('sha256').update(stale).digest('hex').slice(0, 16)}`;
  if (!linked(draft, marker)) {
    // Another starter removes it. If that starter died in between, its marker is stale too.
    const reaper = parseHolder(readOrNull(marker) ?? '');
    if (reaper === null || !isAlive(reaper)) rmSync(marker, { force: true });
    else pause(5);
    return;
  }
  try {
    if (readOrNull(lockPath) === stale) unlinkQuietly(lockPath);
  } finally {
    rmSync(marker, { force: true });
  }
}

function isAlive(holder: Holder): boolean {
  const stat = readProcessStat(holder.pid);
  if (stat === 'unknown') return signalReaches(holder.pid);
  if (stat === null || stat.state === 'Z' || stat.state === 'X') return false;
  return holder.start === null || holder.start === stat.start;
}

/**
 * State and start time of a process from /proc (Linux); null if there is no such process;
 * `unknown` where /proc does not exist.
 */
function readProcessStat(pid: number): { state: string; start: string } | null | 'unknown' {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return readOrNull('/proc/self/stat') === null ? 'unknown' : null;
  }
  // `pid (comm) state ...`: comm may hold spaces and parentheses, so split after the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { state: fields[0] ?? '', start: fields[19] ?? '' };
}

function processStart(pid: number): string | null {
  const stat = readProcessStat(pid);
  return stat === null || stat === 'unknown' ? null : stat.start;
}

function signalReaches(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function linked(from: string, to: string): boolean {
  try {
    linkSync(from, to);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

function readOrNull(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

/** A short synchronous wait (the lock is taken before anything else runs). */
function pause(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
