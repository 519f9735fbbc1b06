import { z } from 'zod';
import { ToolError, requireScope, type Tool } from '../types.js';
import { sandboxHost, type SandboxHost } from './host.js';
import { compileLimits, defaultLimits, limitsSchema, type ShellLimits } from './limits.js';
import type { CallOutcome } from './outcome.js';
import { runPlain } from './plainCall.js';
import { SANDBOX_HOME, SANDBOX_PATH, type NetworkMode } from './sandbox.js';
import { runSandboxed } from './sandboxedCall.js';
import { ensureWorkspace, withWorkspace } from './workspace.js';

export interface ShellOptions {
  sandbox: 'bwrap' | 'none';
  /** false: no network; true: the sandbox's own (slirp4netns, no host loopback); host. */
  network: boolean | 'host';
  /** Names of server environment variables the command may see. */
  env: string[];
  limits: ShellLimits;
}

const optionsSchema = z
  .object({
    sandbox: z.enum(['bwrap', 'none']).default('bwrap'),
    network: z.union([z.boolean(), z.literal('host')]).default(false),
    env: z
      .array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'not a variable name'))
      .refine((names) => !names.some((name) => name === 'PATH' || name === 'HOME'), {
        message: 'PATH and HOME are set by the sandbox',
      })
      .default([]),
    limits: limitsSchema.optional(),
    // The older name of limits.output_bytes, still accepted. At most 64 MiB: the output is
    // held in memory.
    max_output_bytes: z.number().int().min(1024).max(67_108_864).optional(),
  })
  .strict();

function compileOptions(raw: Record<string, unknown>): ShellOptions {
  const parsed = optionsSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`${issue?.path.map(String).join('.') || 'shell'}: ${issue?.message}`);
  }
  return {
    sandbox: parsed.data.sandbox,
    network: parsed.data.network,
    env: parsed.data.env,
    limits: compileLimits(parsed.data.limits, parsed.data.max_output_bytes),
  };
}

/** Options as a caller gave them, of this version or the one before (`maxOutputBytes`). */
type GivenOptions = Partial<Omit<ShellOptions, 'limits'>> & {
  limits?: Partial<ShellLimits>;
  maxOutputBytes?: number;
};

export interface ShellResult {
  exit_code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  /** Output passed the output limit: the rest was not read and the command was stopped. */
  truncated: boolean;
}

/**
 * `shell {command}`: runs a command with bash (sh if absent) in the session's working
 * directory, inside bubblewrap unless the agent set `sandbox: none` (see sandbox.ts for
 * what it isolates), within the entry's limits (limits.ts; what enforces each: host.ts).
 * The environment is fresh: PATH, HOME (the working directory), LANG, and the variables
 * the agent lists in `env`, read from `env` (the server's environment, injected). At the
 * call's timeout or on cancel the command's processes are killed. A call that reaches a
 * limit ends with that limit's tool error (`memory_limit`, `cpu_limit`, `process_limit`,
 * `workspace_limit`); in the sandbox, such a call — like a stopped one — leaves the
 * working directory as it was.
 */
export function createShell(
  serverEnv: Record<string, string | undefined> = process.env,
  host: () => SandboxHost = sandboxHost,
): Tool {
  return {
    name: 'shell',
    description:
      "Runs a shell command (bash) in this conversation's working directory, which keeps " +
      'its files between calls. Returns exit code, stdout and stderr.',
    inputSchema: {
      type: 'object',
      properties: { command: { type: 'string', minLength: 1, maxLength: 16384 } },
      required: ['command'],
      additionalProperties: false,
    },
    defaultPolicy: 'approve',
    defaultTimeoutMs: 30_000,
    compileOptions,
    async execute(args, context): Promise<ShellResult> {
      const scope = requireScope('shell', context);
      // Options a caller forgot must never mean "no sandbox" or "no limits": only an
      // explicit `sandbox: none` disables the sandbox, and missing limits are the defaults.
      const given = (context.options ?? {}) as GivenOptions;
      const limits: ShellLimits = {
        ...defaultLimits,
        ...given.limits,
        outputBytes: given.limits?.outputBytes ?? given.maxOutputBytes ?? defaultLimits.outputBytes,
      };
      const sandboxed = given.sandbox !== 'none';
      const network: NetworkMode =
        given.network === 'host' ? 'host' : given.network === true ? 'isolated' : 'none';
      const { command } = args as { command: string };
      const env: Record<string, string> = {
        PATH: SANDBOX_PATH,
        HOME: SANDBOX_HOME,
        LANG: serverEnv.LANG ?? 'C.UTF-8',
      };
      for (const name of given.env ?? []) {
        const value = serverEnv[name];
        if (value !== undefined) env[name] = value;
      }
      const outcome = await withWorkspace(scope.workspaceDir, async (): Promise<CallOutcome> => {
        try {
          await ensureWorkspace(scope.workspaceDir);
          const call = {
            command,
            workspaceDir: scope.workspaceDir,
            env,
            limits,
            host: host(),
            signal: context.signal,
          };
          return sandboxed ? await runSandboxed({ ...call, network }) : await runPlain(call);
        } catch {
          return {
            kind: 'failed',
            code: 'unavailable',
            message: `the ${sandboxed ? 'sandbox' : 'shell'} could not start`,
          };
        }
      });
      switch (outcome.kind) {
        case 'result':
          return {
            exit_code: outcome.exitCode,
            signal: outcome.signal,
            stdout: outcome.stdout,
            stderr: outcome.stderr,
            truncated: outcome.truncated,
          };
        case 'stopped': {
          const reason: unknown = context.signal.reason;
          const timedOut = reason instanceof ToolError && reason.code === 'timeout';
          throw new ToolError(
            timedOut ? 'timeout' : 'aborted',
            `${timedOut ? `the command did not finish within ${context.timeoutMs} ms` : 'the command was cancelled'}` +
              `; its processes were killed` +
              (sandboxed ? ' and its changes to the working directory were not kept' : '') +
              lastOutput(outcome.output),
          );
        }
        case 'limit':
          throw new ToolError(
            outcome.code,
            `${outcome.message}` +
              (sandboxed ? '; its changes to the working directory were not kept' : '') +
              lastOutput(outcome.output),
          );
        case 'failed':
          throw new ToolError(outcome.code, outcome.message);
      }
    },
  };
}

function lastOutput(output: string): string {
  return output ? `. Last output:\n${output}` : '';
}
