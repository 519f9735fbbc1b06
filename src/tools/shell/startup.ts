import { mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { AgentConfig, Config } from '../../config/types.js';
import { findProgram, sandboxHost, type SandboxHost } from './host.js';
import type { ShellOptions } from './index.js';
import { defaultLimits, type ShellLimits } from './limits.js';
import { runSandboxed } from './sandboxedCall.js';
import { checkBwrap, SANDBOX_PATH, type NetworkMode } from './sandbox.js';

/** Programs the sandbox runs from the host's /usr (sandbox.ts, the wrapper). */
const sandboxPrograms = ['bash', 'cp', 'stat', 'chmod', 'md5sum', 'find', 'tar', 'prlimit'];

/**
 * Whether bubblewrap is installed, can build its sandbox here and finds the programs the
 * sandbox runs: checked once per process, the first time an agent needs it (null: it
 * works). `program` is injected for tests.
 */
export function createSandboxCheck(workspaceDir: string, program = 'bwrap'): () => string | null {
  let problem: string | null | undefined;
  return () => {
    if (problem === undefined) {
      const root = resolve(workspaceDir);
      mkdirSync(root, { recursive: true, mode: 0o700 });
      problem = checkBwrap(root, program) ?? missingPrograms();
    }
    return problem;
  };
}

/** The sandbox an agent's shell uses: null when it has no shell (or denies it). */
function shellSandbox(agent: AgentConfig): ShellOptions | null {
  const entry = agent.tools.shell;
  if (!entry || entry.policy === 'deny') return null;
  return entry.options as ShellOptions;
}

/**
 * Why this agent cannot run here: its shell wants bubblewrap and bubblewrap cannot run
 * (null: it can, or it needs none). The check a tenant's definition passes when it is
 * written and loaded (the operator's file passes `checkShellSandboxes` at start-up): a
 * shell must never silently run unsandboxed; `sandbox: none` is chosen by the operator.
 */
export function shellSandboxProblem(
  agent: AgentConfig,
  sandboxProblem: () => string | null,
): string | null {
  const options = shellSandbox(agent);
  if (!options || options.sandbox === 'none') return null;
  const problem = sandboxProblem();
  if (problem === null) return null;
  return (
    `agents.${agent.name}.tools.shell: ${problem}. Install bubblewrap, or set ` +
    'sandbox: none on this tool to run commands without a sandbox'
  );
}

/**
 * Start-up check for every agent that enables `shell` (a policy other than deny): with
 * `sandbox: bwrap` (the default), bubblewrap must be installed and able to build its
 * sandbox here, and a probe call (through the whole sandbox: cgroups, the size-capped
 * working directory, the wrapper, the archive back and its extraction) must succeed — with
 * `network: true`, through slirp4netns as well — else start-up fails naming the agent: a
 * shell must never silently run unsandboxed or without its network isolation;
 * `sandbox: none` and `network: host` must be chosen explicitly. Returns the start-up
 * lines: which sandbox and network each such agent has, and what enforces each limit.
 * The programs (bubblewrap, slirp4netns) are injected for tests. (A tenant's definitions
 * are checked by the agent directory when written and loaded: `shellSandboxProblem`.)
 */
export async function checkShellSandboxes(
  config: Config,
  programs: { bwrap?: string; slirp4netns?: string } = {},
): Promise<string[]> {
  const program = programs.bwrap ?? 'bwrap';
  const lines: string[] = [];
  const root = resolve(config.tools.workspaceDir);
  const host = sandboxHost();
  let bwrapProblem: string | null | undefined;
  const probes = new Map<NetworkMode, Promise<string | null>>();
  const probe = (network: NetworkMode) => {
    let running = probes.get(network);
    if (!running) {
      // A failed probe is tried once more before start-up is refused: setting up a new
      // network namespace can fail transiently on a loaded host (bubblewrap's loopback
      // setup once answered ECHILD under load); a real problem fails both times.
      const once = () => probeCall(root, host, network, programs.slirp4netns);
      running = once().then((problem) => (problem === null ? null : once()));
      probes.set(network, running);
    }
    return running;
  };
  for (const agent of Object.values(config.agents)) {
    const options = shellSandbox(agent);
    if (!options) continue;
    const where = `agents.${agent.name}.tools.shell`;
    if (options.sandbox === 'none') {
      lines.push(
        `shell (agent ${agent.name}): NO sandbox (sandbox: none) — commands run as this ` +
          `server's user with its files and network; working directories in ${root}; ` +
          `limits: ${describeLimits(options.limits, host, false)}`,
      );
      continue;
    }
    if (bwrapProblem === undefined) {
      mkdirSync(root, { recursive: true, mode: 0o700 });
      bwrapProblem = checkBwrap(root, program) ?? missingPrograms();
    }
    if (bwrapProblem !== null) {
      throw new Error(
        `${where}: ${bwrapProblem}. Install bubblewrap, or set ` +
          'sandbox: none on this tool to run commands without a sandbox',
      );
    }
    const network: NetworkMode =
      options.network === 'host' ? 'host' : options.network ? 'isolated' : 'none';
    const problem = await probe(network);
    if (problem !== null) {
      throw new Error(
        network === 'isolated'
          ? `${where}.network: ${problem}. network: true needs slirp4netns (Debian: apt-get ` +
              'install slirp4netns) and a root server; network: host shares the host network ' +
              '— its loopback included — if you accept that, or use http_fetch'
          : `${where}: the sandbox does not work here: ${problem}`,
      );
    }
    const networkText =
      network === 'isolated'
        ? 'own network (slirp4netns, no host loopback)'
        : network === 'host'
          ? "the HOST's network, loopback included (network: host)"
          : 'no network';
    lines.push(
      `shell (agent ${agent.name}): bubblewrap sandbox, ${networkText}; ` +
        `working directories in ${root}; limits: ${describeLimits(options.limits, host, true)}`,
    );
  }
  return lines;
}

/** Each limit with what enforces it here, or that nothing does. */
export function describeLimits(limits: ShellLimits, host: SandboxHost, sandboxed: boolean): string {
  const memory = host.memoryCgroup
    ? `memory ${limits.memoryMb} MB (memory cgroup${host.memorySwap ? ', swap included' : ''})`
    : `memory ${limits.memoryMb} MB per process (RLIMIT_AS; no memory cgroup)`;
  const processes = host.pidsCgroup
    ? `processes ${limits.processes} (pids cgroup)`
    : sandboxed && !host.root
      ? `processes ${limits.processes} (RLIMIT_NPROC)`
      : `processes NOT limited (no pids cgroup${host.root ? ', and RLIMIT_NPROC does not bind root' : ''})`;
  const workspace = sandboxed
    ? `working directory ${limits.workspaceMb} MB (tmpfs)`
    : `working directory NOT limited (sandbox: none; RLIMIT_FSIZE ${limits.workspaceMb} MB per file)`;
  return [
    memory,
    `CPU ${limits.cpuSeconds} s per process (RLIMIT_CPU)`,
    processes,
    workspace,
    `output ${limits.outputBytes} bytes`,
  ].join(', ');
}

function missingPrograms(): string | null {
  const missing = sandboxPrograms.filter(
    (name) => !SANDBOX_PATH.split(':').some((folder) => findProgram(join(folder, name)) !== null),
  );
  return missing.length === 0
    ? null
    : `the sandbox runs ${missing.join(', ')} from the host's /usr, and they are missing ` +
        '(Debian: coreutils, findutils, tar, util-linux)';
}

/** One command through the whole sandbox, in a scratch directory; null when it works. */
async function probeCall(
  root: string,
  host: SandboxHost,
  network: NetworkMode,
  slirp4netns: string | undefined,
): Promise<string | null> {
  const workspaceDir = join(root, `.probe-${process.pid}-${network}`);
  mkdirSync(workspaceDir, { recursive: true, mode: 0o700 });
  try {
    const limits = { ...defaultLimits, workspaceMb: 1 };
    const outcome = await runSandboxed({
      // A change, so that the archive back and its extraction are part of the probe.
      command: 'touch probe',
      workspaceDir,
      env: { PATH: SANDBOX_PATH, HOME: '/workspace' },
      limits,
      network,
      host,
      signal: AbortSignal.timeout(30_000),
      ...(slirp4netns ? { slirp4netns } : {}),
    });
    if (outcome.kind === 'result' && outcome.exitCode === 0) return null;
    return outcome.kind === 'failed' || outcome.kind === 'limit'
      ? outcome.message
      : outcome.kind === 'stopped'
        ? 'the probe did not finish within 30 s'
        : `the probe command failed (exit status ${outcome.exitCode})`;
  } catch (error) {
    return (error as Error).message;
  } finally {
    rmSync(workspaceDir, { recursive: true, force: true });
  }
}
