import { spawn } from 'node:child_process';
import type { Launch } from './sandbox.js';

export interface ProcessResult {
  exitCode: number | null;
  /** Set when the process was ended by a signal (ours at a stop, or its own). */
  signal: string | null;
  stdout: string;
  stderr: string;
  /** Output went past the cap: the process was stopped and the rest is not shown. */
  truncated: boolean;
  /** Why we stopped it, if we did: the caller's signal fired (timeout, cancel). */
  stopped: 'signal' | 'output' | null;
}

/** Ends a whole process group; it may be gone already. */
function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // ESRCH: already gone.
  }
}

/**
 * Runs a launch in its own process group and collects its output, at most `maxBytes` of
 * stdout and stderr together. When `signal` fires (the call's timeout or cancel) or the
 * output passes the cap, the whole group is killed at once (SIGKILL: a command that
 * ignores SIGTERM must not outlive its limit). When the main process exits, anything it
 * left running in its group is killed too, so nothing lingers between calls.
 */
export function runProcess(
  launch: Launch,
  maxBytes: number,
  signal: AbortSignal,
): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(launch.file, launch.args, {
      cwd: launch.cwd,
      env: launch.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const output = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
    let size = 0;
    let truncated = false;
    let stopped: ProcessResult['stopped'] = null;
    const stop = (why: 'signal' | 'output') => {
      stopped ??= why;
      killGroup(child.pid);
      // A process that left the group (setsid, possible without a sandbox) may still hold
      // the pipes: stop reading so `close` does not wait for it.
      child.stdout.destroy();
      child.stderr.destroy();
    };
    const onAbort = () => stop('signal');
    signal.addEventListener('abort', onAbort, { once: true });
    if (signal.aborted) stop('signal');
    const collect = (stream: 'stdout' | 'stderr') => (chunk: Buffer) => {
      if (truncated) return;
      const room = maxBytes - size;
      if (chunk.length > room) {
        output[stream].push(chunk.subarray(0, room));
        size = maxBytes;
        truncated = true;
        stop('output');
        return;
      }
      output[stream].push(chunk);
      size += chunk.length;
    };
    child.stdout.on('data', collect('stdout'));
    child.stderr.on('data', collect('stderr'));
    child.on('exit', () => killGroup(child.pid));
    child.on('error', (error) => {
      signal.removeEventListener('abort', onAbort);
      reject(error);
    });
    child.on('close', (exitCode, exitSignal) => {
      signal.removeEventListener('abort', onAbort);
      resolve({
        exitCode,
        signal: exitSignal,
        stdout: Buffer.concat(output.stdout).toString('utf8'),
        stderr: Buffer.concat(output.stderr).toString('utf8'),
        truncated,
        stopped,
      });
    });
  });
}
