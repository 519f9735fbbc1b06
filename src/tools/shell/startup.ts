import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import type { AgentConfig, Config } from '../../config/types.js';
import type { ShellOptions } from './index.js';
import { checkBwrap } from './sandbox.js';

/**
 * Whether bubblewrap is installed and can build its sandbox here: checked once per
 * process, the first time an agent needs it (null: it works). `program` is injected for
 * tests.
 */
export function createSandboxCheck(workspaceDir: string, program = 'bwrap'): () => string | null {
  let problem: string | null | undefined;
  return () => {
    if (problem === undefined) {
      const root = resolve(workspaceDir);
      mkdirSync(root, { recursive: true, mode: 0o700 });
      problem = checkBwrap(root, program);
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
 * (null: it can, or it needs none). The same check for the operator's file at start-up and
 * for a tenant's definition when it is written and loaded: a shell must never silently
 * run unsandboxed; `sandbox: none` is chosen explicitly, by the operator.
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
 * Start-up check for every agent of the file that enables `shell` (a policy other than
 * deny): with `sandbox: bwrap` (the default), bubblewrap must be installed and able to
 * build its sandbox here, else start-up fails naming the agent. Returns the start-up lines
 * saying which sandbox each such agent uses. (A tenant's definitions are checked by the
 * agent directory when written and loaded.)
 */
export function checkShellSandboxes(config: Config, program = 'bwrap'): string[] {
  const lines: string[] = [];
  const root = resolve(config.tools.workspaceDir);
  const sandboxProblem = createSandboxCheck(root, program);
  for (const agent of Object.values(config.agents)) {
    const options = shellSandbox(agent);
    if (!options) continue;
    if (options.sandbox === 'none') {
      lines.push(
        `shell (agent ${agent.name}): NO sandbox (sandbox: none) — commands run as this ` +
          `server's user with its files and network; working directories in ${root}`,
      );
      continue;
    }
    const problem = shellSandboxProblem(agent, sandboxProblem);
    if (problem !== null) throw new Error(problem);
    lines.push(
      `shell (agent ${agent.name}): bubblewrap sandbox, ${options.network ? 'network allowed' : 'no network'}; ` +
        `working directories in ${root}`,
    );
  }
  return lines;
}
