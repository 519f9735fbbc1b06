import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import { groupPrefix, type SandboxHost } from './host.js';
import { mebibyte, type ShellLimits } from './limits.js';

/** What the kernel counted against a call's groups. */
export interface CgroupEvents {
  /** Processes the memory cgroup's OOM killer ended. */
  oomKills: number;
  /** Forks refused at pids.max. */
  forksRefused: number;
}

/**
 * One call's cgroups (v1): a pids group (pids.max) and a memory group (the limit, swap
 * included when the host accounts it), made before the call and removed after. The
 * launcher joins them before it execs the sandbox (see `joinAndExec`), so every process of
 * the call is counted from its first fork.
 */
export class CallCgroups {
  private constructor(
    private readonly pids: string | null,
    private readonly memory: string | null,
  ) {}

  /**
   * Makes the groups this host has; `overhead` processes are added to pids.max for the
   * sandbox's own (bubblewrap and the wrapper shell). Throws when one cannot be made:
   * a call must not silently run without a limit the start-up lines promised.
   */
  static create(host: SandboxHost, limits: ShellLimits, overhead: number): CallCgroups {
    const name = `${groupPrefix}${process.pid}-${randomBytes(6).toString('hex')}`;
    let pids: string | null = null;
    let memory: string | null = null;
    try {
      if (host.pidsCgroup) {
        pids = join(host.pidsCgroup, name);
        mkdirSync(pids);
        writeFileSync(join(pids, 'pids.max'), String(limits.processes + overhead));
      }
      if (host.memoryCgroup) {
        memory = join(host.memoryCgroup, name);
        mkdirSync(memory);
        const bytes = String(limits.memoryMb * mebibyte);
        writeFileSync(join(memory, 'memory.limit_in_bytes'), bytes);
        if (host.memorySwap) writeFileSync(join(memory, 'memory.memsw.limit_in_bytes'), bytes);
      }
    } catch (error) {
      for (const dir of [pids, memory]) {
        try {
          if (dir) rmdirSync(dir);
        } catch {
          // Never made.
        }
      }
      throw error;
    }
    return new CallCgroups(pids, memory);
  }

  /** The `cgroup.procs` files a launcher writes its pid to. */
  get procsFiles(): string[] {
    return [this.pids, this.memory].flatMap((dir) => (dir ? [join(dir, 'cgroup.procs')] : []));
  }

  events(): CgroupEvents {
    return {
      oomKills: this.memory ? counter(join(this.memory, 'memory.oom_control'), 'oom_kill') : 0,
      forksRefused: this.pids ? counter(join(this.pids, 'pids.events'), 'max') : 0,
    };
  }

  /**
   * Removes the groups once their processes are gone (a killed process leaves its group
   * a moment after it dies: retried for a few seconds, then left to the next start).
   */
  async remove(): Promise<void> {
    for (const dir of [this.pids, this.memory]) {
      if (!dir) continue;
      for (let attempt = 0; attempt < 50; attempt++) {
        try {
          await rmdir(dir);
          break;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'ENOENT') break;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
    }
  }
}

/** A `name value` line of a cgroup file; 0 when absent or unreadable. */
function counter(file: string, name: string): number {
  try {
    const line = readFileSync(file, 'utf8')
      .split('\n')
      .find((entry) => entry.startsWith(`${name} `));
    return line ? Number(line.slice(name.length + 1)) || 0 : 0;
  } catch {
    return 0;
  }
}

/**
 * A launcher that joins the call's groups and then execs `file args`: `sh` writes its own
 * pid to each `cgroup.procs` (exit 125 if it cannot) before anything else runs.
 */
export function joinAndExec(
  procsFiles: string[],
  file: string,
  args: string[],
): { file: string; args: string[] } {
  if (procsFiles.length === 0) return { file, args };
  const script =
    'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n - 1)); done; exec "$@"';
  return {
    file: '/bin/sh',
    args: ['-c', script, 'parley-cgroups', String(procsFiles.length), ...procsFiles, file, ...args],
  };
}

/** The launcher's exit status when it could not join a group. */
export const joinFailedStatus = 125;
