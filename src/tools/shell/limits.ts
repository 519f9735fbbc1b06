import { z } from 'zod';

/**
 * What one shell call may use (docs/tools.md, "Limits"). Which mechanism enforces each
 * depends on the host (host.ts): see `describeEnforcement`.
 */
export interface ShellLimits {
  /** The whole sandbox's memory, its scratch file systems included (memory cgroup). */
  memoryMb: number;
  /** CPU time of each process of the command (RLIMIT_CPU). */
  cpuSeconds: number;
  /** Processes and threads of the command at once (pids cgroup, or RLIMIT_NPROC). */
  processes: number;
  /** The working directory's size, and each scratch file system's (size-capped tmpfs). */
  workspaceMb: number;
  /** stdout and stderr together; the rest is not read and the command is stopped. */
  outputBytes: number;
}

export const defaultLimits: ShellLimits = {
  memoryMb: 512,
  cpuSeconds: 30,
  processes: 64,
  workspaceMb: 256,
  outputBytes: 65536,
};

/** The `limits` table of a shell entry. */
export const limitsSchema = z
  .object({
    memory_mb: z.number().int().min(16).max(1_048_576).default(defaultLimits.memoryMb),
    cpu_seconds: z.number().int().min(1).max(86_400).default(defaultLimits.cpuSeconds),
    processes: z.number().int().min(4).max(65_536).default(defaultLimits.processes),
    workspace_mb: z.number().int().min(1).max(1_048_576).default(defaultLimits.workspaceMb),
    // At most 64 MiB: the output is held in memory.
    output_bytes: z.number().int().min(1024).max(67_108_864).optional(),
  })
  .strict();

/**
 * The limits an entry asks for. `max_output_bytes` (the older key) and
 * `limits.output_bytes` name the same limit: either may be given, both only if equal.
 */
export function compileLimits(
  raw: z.infer<typeof limitsSchema> | undefined,
  maxOutputBytes: number | undefined,
): ShellLimits {
  const table = raw ?? limitsSchema.parse({});
  if (
    table.output_bytes !== undefined &&
    maxOutputBytes !== undefined &&
    table.output_bytes !== maxOutputBytes
  ) {
    throw new Error(
      'limits.output_bytes: max_output_bytes names the same limit with another value; keep one',
    );
  }
  return {
    memoryMb: table.memory_mb,
    cpuSeconds: table.cpu_seconds,
    processes: table.processes,
    workspaceMb: table.workspace_mb,
    outputBytes: table.output_bytes ?? maxOutputBytes ?? defaultLimits.outputBytes,
  };
}

export const mebibyte = 1024 * 1024;

/**
 * The prlimit command line (util-linux) that applies the rlimits, ending with `--`:
 * RLIMIT_CPU (SIGXCPU at the limit, SIGKILL a second later), RLIMIT_FSIZE (no file larger
 * than the working directory may be), no core files, and where asked RLIMIT_NPROC (binds
 * only a server that is not root) and RLIMIT_AS (the memory limit per process, where no
 * memory cgroup holds the sandbox's total).
 */
export function rlimitCommand(
  limits: ShellLimits,
  options: { processes: boolean; addressSpace: boolean },
): string[] {
  return [
    'prlimit',
    `--cpu=${limits.cpuSeconds}:${limits.cpuSeconds + 1}`,
    `--fsize=${limits.workspaceMb * mebibyte}`,
    '--core=0',
    ...(options.processes ? [`--nproc=${limits.processes}`] : []),
    ...(options.addressSpace ? [`--as=${limits.memoryMb * mebibyte}`] : []),
    '--',
  ];
}

/** The exit status of a command its RLIMIT_CPU ended (128 + SIGXCPU). */
export const cpuLimitStatus = 128 + 24;
