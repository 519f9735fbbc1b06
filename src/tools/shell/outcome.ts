import type { CgroupEvents } from './cgroups.js';
import type { ShellLimits } from './limits.js';

/** Tool error codes of a limit a call reached (docs/tools.md, "Limits"). */
export type LimitCode = 'memory_limit' | 'cpu_limit' | 'process_limit' | 'workspace_limit';

/** How one shell call ended, before it becomes a result or a tool error (index.ts). */
export type CallOutcome =
  | {
      kind: 'result';
      exitCode: number | null;
      signal: string | null;
      stdout: string;
      stderr: string;
      truncated: boolean;
    }
  /** The caller's signal fired (timeout or cancel): every process was killed. */
  | { kind: 'stopped'; output: string }
  | { kind: 'limit'; code: LimitCode; message: string; output: string }
  | { kind: 'failed'; code: 'unavailable' | 'tool_failed'; message: string };

/** The limit a call reached, judged from the kernel's counters and the command's status. */
export function reachedLimit(
  limits: ShellLimits,
  events: CgroupEvents,
  ended: { cpuLimited: boolean; workspaceFull: boolean },
): { code: LimitCode; message: string } | null {
  if (events.oomKills > 0) {
    return {
      code: 'memory_limit',
      message: `the command used more than its ${limits.memoryMb} MB of memory and was killed`,
    };
  }
  if (events.forksRefused > 0) {
    return {
      code: 'process_limit',
      message: `the command reached its limit of ${limits.processes} processes`,
    };
  }
  if (ended.cpuLimited) {
    return {
      code: 'cpu_limit',
      message: `the command used its ${limits.cpuSeconds} s of CPU time and was stopped`,
    };
  }
  if (ended.workspaceFull) return workspaceFull(limits);
  return null;
}

export function workspaceFull(limits: ShellLimits): { code: LimitCode; message: string } {
  return {
    code: 'workspace_limit',
    message: `the working directory reached its limit of ${limits.workspaceMb} MB`,
  };
}

/** The last part of what the command printed, for an error message. */
export function tailOf(stdout: string, stderr: string): string {
  return `${stdout}${stderr}`.slice(-2000);
}
