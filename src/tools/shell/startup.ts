import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Config } from '../../config/types.js';
import type { ShellOptions } from './index.js';
import { checkBwrap } from './sandbox.js';

/**
 * Start-up check for every agent that enables `shell` (a policy other than deny): with
 * `sandbox: bwrap` (the default), bubblewrap must be installed and able to build its
 * sandbox here, else start-up fails naming the agent — a shell must never silently run
 * unsandboxed; `sandbox: none` must be chosen explicitly. Returns the start-up lines
 * saying which sandbox each such agent uses. `program` is injected for tests.
 */
export function checkShellSandboxes(config: Config, program = 'bwrap'): string[] {
  const lines: string[] = [];
  const root = resolve(config.tools.workspaceDir);
  let bwrapProblem: string | null | undefined;
  for (const agent of Object.values(config.agents)) {
    const entry = agent.tools.shell;
    if (!entry || entry.policy === 'deny') continue;
    const options = entry.options as ShellOptions;
    if (options.sandbox === 'none') {
      lines.push(
        `shell (agent ${agent.name}): NO sandbox (sandbox: none) — commands run as this ` +
          `server's user with its files and network; working directories in ${root}`,
      );
      continue;
    }
    if (bwrapProblem === undefined) {
      mkdirSync(root, { recursive: true, mode: 0o700 });
      bwrapProblem = checkBwrap(root, program);
    }
    if (bwrapProblem !== null) {
      throw new Error(
        `agents.${agent.name}.tools.shell: ${bwrapProblem}. Install bubblewrap, or set ` +
          'sandbox: none on this tool to run commands without a sandbox',
      );
    }
    lines.push(
      `shell (agent ${agent.name}): bubblewrap sandbox, ${options.network ? 'network allowed' : 'no network'}; ` +
        `working directories in ${root}`,
    );
  }
  return lines;
}
