import { z } from 'zod';
import { ToolError, requireScope, type Tool } from '../types.js';
import { runProcess } from './process.js';
import { SANDBOX_HOME, SANDBOX_PATH, bwrapLaunch, plainLaunch } from './sandbox.js';
import { ensureWorkspace } from './workspace.js';

export interface ShellOptions {
  sandbox: 'bwrap' | 'none';
  network: boolean;
  /** Names of server environment variables the command may see. */
  env: string[];
  maxOutputBytes: number;
}

const optionsSchema = z
  .object({
    sandbox: z.enum(['bwrap', 'none']).default('bwrap'),
    network: z.boolean().default(false),
    env: z
      .array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'not a variable name'))
      .refine((names) => !names.some((name) => name === 'PATH' || name === 'HOME'), {
        message: 'PATH and HOME are set by the sandbox',
      })
      .default([]),
    // At most 64 MiB: the output is held in memory.
    max_output_bytes: z.number().int().min(1024).max(67_108_864).default(65536),
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
    maxOutputBytes: parsed.data.max_output_bytes,
  };
}

export interface ShellResult {
  exit_code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  /** Output passed `max_output_bytes`: the command was stopped there. */
  truncated: boolean;
}

/**
 * `shell {command}`: runs a command with bash (sh if absent) in the session's working
 * directory, inside bubblewrap unless the agent set `sandbox: none` (see sandbox.ts for
 * what it isolates). The environment is fresh: PATH, HOME (the working directory), LANG,
 * and the variables the agent lists in `env`, read from `env` (the server's environment,
 * injected). At the call's timeout or on cancel the command's processes are killed.
 */
export function createShell(serverEnv: Record<string, string | undefined> = process.env): Tool {
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
      // Options a caller forgot must never mean "no sandbox": only an explicit none does.
      const given = (context.options ?? {}) as Partial<ShellOptions>;
      const options: ShellOptions = {
        sandbox: given.sandbox === 'none' ? 'none' : 'bwrap',
        network: given.network === true,
        env: given.env ?? [],
        maxOutputBytes: given.maxOutputBytes ?? 65536,
      };
      const { command } = args as { command: string };
      await ensureWorkspace(scope.workspaceDir);
      const env: Record<string, string> = {
        PATH: SANDBOX_PATH,
        HOME: SANDBOX_HOME,
        LANG: serverEnv.LANG ?? 'C.UTF-8',
      };
      for (const name of options.env) {
        const value = serverEnv[name];
        if (value !== undefined) env[name] = value;
      }
      const launch =
        options.sandbox === 'bwrap'
          ? bwrapLaunch(command, scope.workspaceDir, env, options.network)
          : plainLaunch(command, scope.workspaceDir, env);
      let result;
      try {
        result = await runProcess(launch, options.maxOutputBytes, context.signal);
      } catch {
        throw new ToolError(
          'unavailable',
          `the ${options.sandbox === 'bwrap' ? 'sandbox' : 'shell'} could not start`,
        );
      }
      if (result.stopped === 'signal') {
        const reason: unknown = context.signal.reason;
        const timedOut = reason instanceof ToolError && reason.code === 'timeout';
        const tail = `${result.stdout}${result.stderr}`.slice(-2000);
        throw new ToolError(
          timedOut ? 'timeout' : 'aborted',
          `${timedOut ? `the command did not finish within ${context.timeoutMs} ms` : 'the command was cancelled'}` +
            `; its processes were killed${tail ? `. Last output:\n${tail}` : ''}`,
        );
      }
      return {
        exit_code: result.exitCode,
        signal: result.stopped === 'output' ? null : result.signal,
        stdout: result.stdout,
        stderr: result.stderr,
        truncated: result.truncated,
      };
    },
  };
}
