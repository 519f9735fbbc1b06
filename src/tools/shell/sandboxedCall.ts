import type { ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { CallCgroups, joinAndExec } from './cgroups.js';
import type { SandboxHost } from './host.js';
import { cpuLimitStatus, mebibyte, rlimitCommand, type ShellLimits } from './limits.js';
import { attachNetwork, sandboxResolvConf, type SandboxNetwork } from './network.js';
import { reachedLimit, tailOf, workspaceFull, type CallOutcome } from './outcome.js';
import { killGroup, runProcess } from './process.js';
import { readReport, startExtraction, type Report, type SaveOutcome } from './report.js';
import { bwrapLaunch, sandboxFds, type NetworkMode } from './sandbox.js';
import { discardStaging, replaceWorkspace } from './workspace.js';

export interface SandboxedCall {
  command: string;
  /** The session's saved working directory on the host. */
  workspaceDir: string;
  env: Record<string, string>;
  limits: ShellLimits;
  network: NetworkMode;
  host: SandboxHost;
  signal: AbortSignal;
  /** The slirp4netns program (tests inject a missing one). */
  slirp4netns?: string;
}

/** bubblewrap and the wrapper shell, counted in pids.max besides the command's own. */
const sandboxProcesses = 3;

/**
 * One command in the bubblewrap sandbox (sandbox.ts), within its limits:
 *
 * 1. the call's cgroups are made and the launcher joins them before bwrap starts;
 * 2. inside, the wrapper copies the saved working directory into a size-capped tmpfs at
 *    /workspace and runs the command under its rlimits (with `network: true`, only once
 *    slirp4netns has configured the sandbox's own network);
 * 3. the wrapper reports the command's status on fd 3 and streams the directory back as a
 *    tar archive: when the call ended within its limits the archive is unpacked, in a
 *    sandbox of its own, into a fresh directory that then replaces the saved one; when a
 *    limit was reached, or the call was stopped, nothing is saved — the working
 *    directory stays as it was before the call.
 *
 * The caller holds the working directory's lock (workspace.ts: withWorkspace).
 */
export async function runSandboxed(call: SandboxedCall): Promise<CallOutcome> {
  const { limits, host, signal } = call;
  let cgroups: CallCgroups;
  try {
    cgroups = CallCgroups.create(host, limits, sandboxProcesses);
  } catch {
    return { kind: 'failed', code: 'unavailable', message: 'the limits could not be applied' };
  }
  const workspaceBytes = limits.workspaceMb * mebibyte;
  // The archive may exceed the directory's size by tar's headers (512 bytes per entry).
  const maxArchiveBytes = workspaceBytes + Math.floor(workspaceBytes / 8) + mebibyte;
  const isolated = call.network === 'isolated';
  const launch = bwrapLaunch(
    call.command,
    {
      workspace: call.workspaceDir,
      env: call.env,
      network: call.network,
      workspaceBytes,
      ...(isolated ? { resolvConf: sandboxResolvConf() } : {}),
    },
    rlimitCommand(limits, { processes: true, addressSpace: host.memoryCgroup === null }),
  );
  const joined = joinAndExec(cgroups.procsFiles, launch.file, launch.args);

  let report: Promise<{ report: Report; saved: SaveOutcome }> = Promise.resolve({
    report: { kind: 'none' },
    saved: { kind: 'skipped' },
  });
  // Set from callbacks: an object, so the checks below see what they wrote.
  const attached: { network: SandboxNetwork | null; error: string | null } = {
    network: null,
    error: null,
  };
  let networkReady: Promise<void> = Promise.resolve();
  let cleanUp = async () => {};
  try {
    const result = await runProcess(
      { ...launch, ...joined },
      {
        maxOutputBytes: limits.outputBytes,
        signal,
        atOutputCap: 'close',
        extraPipes: isolated ? 3 : 1,
        onSpawn: (child) => {
          report = readReport(
            child.stdio[sandboxFds.report] as Readable,
            async (line) => {
              if (line.kind !== 'done') return null;
              const limit = reachedLimit(limits, cgroups.events(), {
                cpuLimited: line.status === cpuLimitStatus,
                workspaceFull: line.freeBlocks === 0,
              });
              if (limit || signal.aborted || !line.changed) return null;
              const extraction = await startExtraction(call.workspaceDir, workspaceBytes);
              cleanUp = () => discardStaging(extraction.staging);
              return extraction;
            },
            maxArchiveBytes,
          );
          if (isolated) {
            networkReady = connectNetwork(child, signal, call.slirp4netns).then(
              (network) => {
                attached.network = network;
              },
              (error: unknown) => {
                attached.error = (error as Error).message;
                killGroup(child.pid);
              },
            );
          }
        },
      },
    );
    await networkReady;
    const { report: ended, saved } = await report;
    const events = cgroups.events();
    const output = tailOf(result.stdout, result.stderr);
    if (result.stopped === 'signal') return { kind: 'stopped', output };
    if (attached.error !== null) {
      return {
        kind: 'failed',
        code: 'unavailable',
        message: `the sandbox's network could not start: ${attached.error}`,
      };
    }
    if (ended.kind === 'restore-failed') {
      return {
        kind: 'limit',
        code: 'workspace_limit',
        message: `the working directory holds more than its limit of ${limits.workspaceMb} MB; nothing ran`,
        output,
      };
    }
    const limit = reachedLimit(limits, events, {
      cpuLimited: ended.kind === 'done' && ended.status === cpuLimitStatus,
      workspaceFull: ended.kind === 'done' && ended.freeBlocks === 0,
    });
    if (limit) return { kind: 'limit', ...limit, output };
    if (ended.kind === 'none') {
      return {
        kind: 'failed',
        code: 'tool_failed',
        message:
          `the sandbox ended without finishing the call (exit status ${result.exitCode ?? result.signal})` +
          (output ? `. Last output:\n${output}` : ''),
      };
    }
    if (saved.kind === 'overflow') return { kind: 'limit', ...workspaceFull(limits), output };
    if (!ended.changed) {
      return {
        kind: 'result',
        exitCode: ended.status,
        signal: null,
        stdout: result.stdout,
        stderr: result.stderr,
        truncated: result.truncated,
      };
    }
    if (saved.kind !== 'extracted') {
      return {
        kind: 'failed',
        code: 'tool_failed',
        message: 'the working directory could not be saved; it is as it was before the call',
      };
    }
    await replaceWorkspace(call.workspaceDir, saved.staging);
    cleanUp = async () => {};
    return {
      kind: 'result',
      exitCode: ended.status,
      signal: null,
      stdout: result.stdout,
      stderr: result.stderr,
      truncated: result.truncated,
    };
  } finally {
    attached.network?.stop();
    await cleanUp().catch(() => {});
    void cgroups.remove();
  }
}

/** Waits for bwrap's --info-fd JSON, attaches slirp4netns, then lets the command start. */
async function connectNetwork(
  child: ChildProcess,
  signal: AbortSignal,
  program?: string,
): Promise<SandboxNetwork> {
  const pipes = child.stdio as unknown as (Readable | Writable)[];
  const info = pipes[sandboxFds.info] as Readable;
  const block = pipes[sandboxFds.block] as Writable;
  block.on('error', () => {});
  const pid = await new Promise<number>((resolve, reject) => {
    let text = '';
    info.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
      const match = /"child-pid"\s*:\s*(\d+)/.exec(text);
      if (match) resolve(Number(match[1]));
    });
    info.on('end', () => reject(new Error('bubblewrap did not start the sandbox')));
    info.on('error', reject);
  });
  const network = await attachNetwork(pid, signal, program);
  block.write('1');
  return network;
}
