import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { testSharedBuffersMb } from './embedded.js';

/** The repository root: children run `src/cli/main.ts` through tsx from here. */
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

export type Role = 'serve' | 'api' | 'worker';

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface StartOptions {
  /** Config file contents (the file's snake_case shape); written as YAML to a temp dir. */
  config?: Record<string, unknown>;
  /** Embedded storage directory (PARLEY_DATA_DIR). */
  dataDir?: string;
  /** PostgreSQL (DATABASE_URL). */
  databaseUrl?: string;
  /** Further environment variables (PARLEY_LEASE_TTL_MS, PARLEY_DEMO_DELAY_MS, ...). */
  env?: Record<string, string>;
  /** How long start-up may take before it counts as failed. */
  readyTimeoutMs?: number;
}

/**
 * One real Parley process (`node --import tsx src/cli/main.ts <role>`): always the current
 * source, a real pid, real signals. stdout and stderr are captured for assertions.
 */
export class ParleyProcess {
  readonly lines: string[] = [];
  private stdoutText = '';
  private stderrText = '';
  private partial = '';
  private waiters: (() => void)[] = [];
  private exitState: Exit | null = null;
  readonly exited: Promise<Exit>;
  /** `http://127.0.0.1:PORT` for roles with an API, else null. */
  url: string | null = null;

  constructor(
    readonly role: Role,
    readonly child: ChildProcess,
    private readonly configDir: string,
  ) {
    child.stdout?.setEncoding('utf8');
    child.stderr?.setEncoding('utf8');
    child.stdout?.on('data', (chunk: string) => {
      this.stdoutText += chunk;
      this.partial += chunk;
      let newline: number;
      while ((newline = this.partial.indexOf('\n')) >= 0) {
        this.lines.push(this.partial.slice(0, newline));
        this.partial = this.partial.slice(newline + 1);
      }
      this.notify();
    });
    child.stderr?.on('data', (chunk: string) => {
      this.stderrText += chunk;
    });
    this.exited = new Promise<Exit>((resolveExit) => {
      child.once('exit', (code, signal) => {
        this.exitState = { code, signal };
        rmSync(this.configDir, { recursive: true, force: true });
        this.notify();
        resolveExit(this.exitState);
      });
    });
  }

  get pid(): number {
    return this.child.pid as number;
  }

  get stdout(): string {
    return this.stdoutText;
  }

  get stderr(): string {
    return this.stderrText;
  }

  /** Null while the process runs. */
  get exit(): Exit | null {
    return this.exitState;
  }

  /** Resolves with the first stdout line matching `pattern`; rejects if the process exits first. */
  async waitForLine(pattern: RegExp, timeoutMs = 30_000): Promise<RegExpMatchArray> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      for (const line of this.lines) {
        const match = pattern.exec(line);
        if (match) return match;
      }
      if (this.exitState) {
        throw new Error(
          `parley ${this.role} (pid ${this.pid}) exited (${JSON.stringify(this.exitState)}) before printing ${pattern}\n${this.describe()}`,
        );
      }
      if (Date.now() > deadline) {
        throw new Error(
          `parley ${this.role} (pid ${this.pid}) did not print ${pattern} within ${timeoutMs} ms\n${this.describe()}`,
        );
      }
      await new Promise<void>((resolveWait) => {
        const timer = setTimeout(resolveWait, 250);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolveWait();
        });
      });
    }
  }

  kill(signal: NodeJS.Signals): void {
    if (this.exitState === null) this.child.kill(signal);
  }

  /** Waits for the process to end; throws (with its output) if it takes longer than `timeoutMs`. */
  async waitForExit(timeoutMs = 30_000): Promise<Exit> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new Error(
              `parley ${this.role} (pid ${this.pid}) still running after ${timeoutMs} ms\n${this.describe()}`,
            ),
          ),
        timeoutMs,
      );
    });
    try {
      return await Promise.race([this.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The last lines of output, for failure messages. */
  describe(): string {
    const tail = (text: string) => text.split('\n').slice(-30).join('\n');
    return `--- stdout (tail)\n${tail(this.stdoutText)}\n--- stderr (tail)\n${tail(this.stderrText)}`;
  }

  private notify(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) waiter();
  }
}

const running = new Set<ParleyProcess>();

/**
 * Starts `parley <role>` and resolves once it is ready: the API listens (its URL is parsed
 * from "listening on ...", port 0 = any free port) and, for roles with a worker, the worker
 * is claiming. Every process started here is tracked for `stopAllProcesses`.
 */
export async function startParley(role: Role, options: StartOptions = {}): Promise<ParleyProcess> {
  const configDir = mkdtempSync(join(tmpdir(), 'parley-proc-'));
  const configPath = join(configDir, 'parley.yaml');
  writeFileSync(configPath, stringify(options.config ?? {}));
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    // Nothing from the test runner's environment may steer the child's storage or config.
    if (value === undefined || name.startsWith('PARLEY_') || name === 'DATABASE_URL') continue;
    if (name === 'NODE_OPTIONS') continue;
    env[name] = value;
  }
  Object.assign(env, {
    PARLEY_CONFIG: configPath,
    PARLEY_PORT: '0',
    PARLEY_HOST: '127.0.0.1',
    PARLEY_LOG_LEVEL: 'info',
    PARLEY_EMBEDDED_SHARED_BUFFERS_MB: String(testSharedBuffersMb),
    ...(options.dataDir === undefined ? {} : { PARLEY_DATA_DIR: options.dataDir }),
    ...(options.databaseUrl === undefined ? {} : { DATABASE_URL: options.databaseUrl }),
    ...options.env,
  });
  // The built command (the global setup builds it): what operators run, and it starts fast.
  const child = spawn(process.execPath, ['dist/cli/main.js', role], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const proc = new ParleyProcess(role, child, configDir);
  running.add(proc);
  void proc.exited.then(() => running.delete(proc));
  // Generous: a busy 2-core machine can take long to start a process (no timing is asserted).
  const timeoutMs = options.readyTimeoutMs ?? 120_000;
  try {
    if (role !== 'worker') {
      const match = await proc.waitForLine(/listening on (http:\/\/\S+)/, timeoutMs);
      proc.url = match[1] as string;
    }
    if (role !== 'api') await proc.waitForLine(/worker claiming up to/, timeoutMs);
  } catch (error) {
    proc.kill('SIGKILL');
    await proc.exited;
    throw error;
  }
  return proc;
}

/** SIGKILLs every process still running (afterEach/afterAll) and waits until each is gone. */
export async function stopAllProcesses(): Promise<void> {
  const left = [...running];
  for (const proc of left) proc.kill('SIGKILL');
  await Promise.all(left.map((proc) => proc.exited));
}

/** Owner strings are `${hostname}:${pid}` (cli/start.ts). */
export function pidOfOwner(owner: string | null): number | null {
  if (!owner) return null;
  const pid = Number(owner.slice(owner.lastIndexOf(':') + 1));
  return Number.isInteger(pid) && pid > 0 ? pid : null;
}

// Last line of defence: a test runner that dies must not leave Parley processes behind.
process.once('exit', () => {
  for (const proc of running) proc.kill('SIGKILL');
});
