import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import type pg from 'pg';

/**
 * CPU time of processes, from /proc (Linux): utime + stime of /proc/PID/stat, in
 * milliseconds. Clock ticks are 10 ms on most kernels, so a figure is only as fine as the
 * sum of many ticks: measure windows of seconds, not single turns.
 */
const ticksPerSecond = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

interface Stat {
  ppid: number;
  /** utime + stime, ms. */
  ownMs: number;
  /** cutime + cstime: children that ended and were waited for, ms. */
  reapedChildrenMs: number;
}

function readStat(pid: number): Stat | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // The command name (field 2) may hold spaces and parentheses: fields start after the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state): ppid is field 4, utime..cstime fields 14..17.
  const at = (field: number) => Number(fields[field - 3]);
  const toMs = (ticks: number) => (ticks * 1000) / ticksPerSecond;
  return {
    ppid: at(4),
    ownMs: toMs(at(14) + at(15)),
    reapedChildrenMs: toMs(at(16) + at(17)),
  };
}

/** A process's CPU time so far (ms), or null when /proc does not show it. */
export function processCpuMs(pid: number): number | null {
  return readStat(pid)?.ownMs ?? null;
}

function childrenOf(parent: number): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    if (readStat(Number(entry))?.ppid === parent) found.push(Number(entry));
  }
  return found;
}

/**
 * PostgreSQL's CPU, two ways, over a window (`start()` … `stop()`):
 *
 * - `cluster`: the postmaster and every child of it — its live children's utime + stime,
 *   plus its own and its reaped children's (cutime + cstime). That is the whole server:
 *   on a PostgreSQL other work shares, it counts that work too.
 * - `own`: the server processes of the measured database (client backends, autovacuum
 *   workers on it), plus the server-wide background processes (WAL writer, checkpointer,
 *   background writer, launchers: pg_stat_activity's rows without a database), which
 *   serve every database. Backends come and go (a
 *   pool closes idle connections), so `poll()` is called during the window; a backend's
 *   CPU after its last poll is lost (a pool's idle timeout, 10 s, keeps that small).
 *
 * Both are null when the server's processes are not visible in this machine's /proc (a
 * remote PostgreSQL, another PID namespace).
 */
export class PostgresCpu {
  private postmaster: number | null = null;
  private clusterStart = 0;
  private readonly baseline = new Map<number, number>();
  private readonly latest = new Map<number, number>();
  /** Processes without a database: the server-wide background processes. */
  private readonly background = new Set<number>();

  constructor(
    /** A connection to the measured database; its own backend is left out of `own`. */
    private readonly client: pg.Client,
  ) {}

  private clusterMs(): number | null {
    if (this.postmaster === null) return null;
    const main = readStat(this.postmaster);
    if (!main) return null;
    let total = main.ownMs + main.reapedChildrenMs;
    for (const child of childrenOf(this.postmaster)) total += readStat(child)?.ownMs ?? 0;
    return total;
  }

  async start(): Promise<void> {
    const self = await this.client.query<{ pid: number }>('select pg_backend_pid() as pid');
    const pid = self.rows[0]?.pid as number;
    this.postmaster = readStat(pid)?.ppid ?? null;
    this.clusterStart = this.clusterMs() ?? 0;
    this.baseline.clear();
    this.latest.clear();
    this.background.clear();
    for (const [processId, ms] of await this.sample()) {
      this.baseline.set(processId, ms);
      this.latest.set(processId, ms);
    }
  }

  /** Notes the CPU of the measured database's server processes seen now. */
  async poll(): Promise<void> {
    for (const [processId, ms] of await this.sample()) {
      if (!this.baseline.has(processId)) this.baseline.set(processId, 0);
      this.latest.set(processId, ms);
    }
  }

  /** CPU ms over the window: `own` = `backends` (the database's) + `background`. */
  async stop(): Promise<{
    own_ms: number | null;
    backends_ms: number | null;
    background_ms: number | null;
    cluster_ms: number | null;
  }> {
    await this.poll();
    if (this.postmaster === null) {
      return { own_ms: null, backends_ms: null, background_ms: null, cluster_ms: null };
    }
    let backends = 0;
    let background = 0;
    for (const [processId, ms] of this.latest) {
      const used = ms - (this.baseline.get(processId) ?? 0);
      if (this.background.has(processId)) background += used;
      else backends += used;
    }
    const cluster = this.clusterMs();
    return {
      own_ms: backends + background,
      backends_ms: backends,
      background_ms: background,
      cluster_ms: cluster === null ? null : cluster - this.clusterStart,
    };
  }

  private async sample(): Promise<Map<number, number>> {
    const found = await this.client.query<{ pid: number; background: boolean }>(
      `select pid, datname is null as background from pg_stat_activity
        where pid <> pg_backend_pid()
          and (datname = current_database() or datname is null)`,
    );
    const cpu = new Map<number, number>();
    for (const { pid, background } of found.rows) {
      if (background) this.background.add(pid);
      const ms = processCpuMs(pid);
      if (ms !== null) cpu.set(pid, ms);
    }
    return cpu;
  }
}
