import { CallCgroups, joinAndExec } from './cgroups.js';
import type { SandboxHost } from './host.js';
import { cpuLimitStatus, rlimitCommand, type ShellLimits } from './limits.js';
import { reachedLimit, tailOf, type CallOutcome } from './outcome.js';
import { runProcess } from './process.js';
import { plainLaunch } from './sandbox.js';

export interface PlainCall {
  command: string;
  workspaceDir: string;
  env: Record<string, string>;
  limits: ShellLimits;
  host: SandboxHost;
  signal: AbortSignal;
}

/**
 * `sandbox: none`: the command runs as the server's user in the working directory itself,
 * with the call's cgroups and rlimits — CPU, file size, memory, processes (cgroups only:
 * RLIMIT_NPROC would count every process of the server's user) and output. The working
 * directory's size is not limited: there is no sandbox to mount a capped one in.
 */
export async function runPlain(call: PlainCall): Promise<CallOutcome> {
  const { limits, host } = call;
  let cgroups: CallCgroups;
  try {
    cgroups = CallCgroups.create(host, limits, 1);
  } catch {
    return { kind: 'failed', code: 'unavailable', message: 'the limits could not be applied' };
  }
  try {
    const launch = plainLaunch(
      call.command,
      call.workspaceDir,
      call.env,
      rlimitCommand(limits, { processes: false, addressSpace: host.memoryCgroup === null }),
    );
    const result = await runProcess(
      { ...launch, ...joinAndExec(cgroups.procsFiles, launch.file, launch.args) },
      { maxOutputBytes: limits.outputBytes, signal: call.signal, atOutputCap: 'kill' },
    );
    const output = tailOf(result.stdout, result.stderr);
    if (result.stopped === 'signal') return { kind: 'stopped', output };
    const limit = reachedLimit(limits, cgroups.events(), {
      cpuLimited: result.signal === 'SIGXCPU' || result.exitCode === cpuLimitStatus,
      workspaceFull: false,
    });
    if (limit) return { kind: 'limit', ...limit, output };
    return {
      kind: 'result',
      exitCode: result.exitCode,
      signal: result.truncated ? null : result.signal,
      stdout: result.stdout,
      stderr: result.stderr,
      truncated: result.truncated,
    };
  } finally {
    void cgroups.remove();
  }
}
