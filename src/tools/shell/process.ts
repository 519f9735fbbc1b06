import { spawn, type ChildProcess } from 'node:child_process';
import type { Launch } from './sandbox.js';

export interface ProcessResult {
  exitCode: number | null;
  /** Set when the process was ended by a signal (ours at a stop, or its own). */
  signal: string | null;
  stdout: string;
  stderr: string;
  /** Output went past the cap: the rest was not read (and the command was stopped). */
  truncated: boolean;
  /** Why we stopped it, if we did: the caller's signal fired (timeout, cancel). */
  stopped: 'signal' | null;
}

export interface RunOptions {
  /** stdout and stderr together; past it nothing more is read. */
  maxOutputBytes: number;
  /** The call's timeout or cancel: the whole process group is killed. */
  signal: AbortSignal;
  /**
   * At the output cap: `kill` the process group, or `close` our ends of its output pipes
   * (the command's next write fails, SIGPIPE ends it) and let the rest of the sandbox
   * finish — the wrapper still reports and saves the working directory.
   */
  atOutputCap: 'kill' | 'close';
  /** Extra pipes after stdio, as file descriptors 3, 4...: the caller reads and writes them. */
  extraPipes?: number;
  /** Called once the process is spawned (the caller wires up its extra pipes). */
  onSpawn?: (child: ChildProcess) => void;
}

/** Ends a whole process group; it may be gone already. */
export function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // ESRCH: already gone.
  }
}

/**
 * Runs a launch in its own process group and collects its output, at most
 * `maxOutputBytes` of stdout and stderr together. When `signal` fires (the call's timeout
 * or cancel) the whole group is killed at once (SIGKILL: a command that ignores SIGTERM
 * must not outlive its limit). When the main process exits, anything it left running in
 * its group is killed too, so nothing lingers between calls.
 */
export function runProcess(launch: Launch, options: RunOptions): Promise<ProcessResult> {
  const { maxOutputBytes: maxBytes, signal } = options;
  return new Promise((resolve, reject) => {
    const child = spawn(launch.file, launch.args, {
      cwd: launch.cwd,
      env: launch.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe', ...Array<'pipe'>(options.extraPipes ?? 0).fill('pipe')],
    });
    const output = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
    let size = 0;
    let truncated = false;
    let stopped: ProcessResult['stopped'] = null;
    const closeOutput = () => {
      // A process that left the group (setsid, possible without a sandbox) may still hold
      // the pipes: stop reading so `close` does not wait for it.
      child.stdout?.destroy();
      child.stderr?.destroy();
    };
    const onAbort = () => {
      stopped ??= 'signal';
      killGroup(child.pid);
      closeOutput();
      for (const stream of child.stdio.slice(3)) stream?.destroy();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    const collect = (stream: 'stdout' | 'stderr') => (chunk: Buffer) => {
      if (truncated) return;
      const room = maxBytes - size;
      if (chunk.length > room) {
        output[stream].push(chunk.subarray(0, room));
        size = maxBytes;
        truncated = true;
        if (options.atOutputCap === 'kill') killGroup(child.pid);
        closeOutput();
        return;
      }
      output[stream].push(chunk);
      size += chunk.length;
    };
    child.stdout?.on('data', collect('stdout'));
    child.stderr?.on('data', collect('stderr'));
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
    if (child.pid !== undefined) options.onSpawn?.(child);
    if (signal.aborted) onAbort();
  });
}
