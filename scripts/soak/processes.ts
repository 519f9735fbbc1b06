import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { join } from 'node:path';

/**
 * The real `parley api` and `parley worker` processes of a soak run (`node
 * dist/cli/main.js <role>`), one slot per process: a slot survives its process, so that
 * the chaos can kill, pause and restart it, and clients keep one fixed URL per API slot
 * (an API comes back on the same port, as behind a load balancer).
 *
 * A slot is `down` between a kill and its restart, `paused` between SIGSTOP and SIGCONT.
 * An exit nobody asked for (no SIGKILL from the chaos, no SIGTERM at the end) is counted,
 * as a failure of the run: a Parley process must survive everything the soak does to its
 * neighbours and to PostgreSQL. Like a process supervisor, the slot then starts it again,
 * so the rest of the run still has its five processes.
 */
/** `serve`: API and worker in one process (the embedded engine's soak). */
export type Role = 'api' | 'worker' | 'serve';

export interface SlotEnvironment {
  root: string;
  logDir: string;
  env: Record<string, string>;
}

export class Slot {
  private child: ChildProcess | null = null;
  private exitPromise: Promise<void> = Promise.resolve();
  private expectingExit = false;
  private log: WriteStream;
  private lineBuffer = '';
  private closed = false;
  state: 'down' | 'starting' | 'up' | 'paused' = 'down';
  /** Exits of a running process that the soak did not cause. */
  unexpectedExits: { code: number | null; signal: string | null }[] = [];
  /** Lines of output matching `countPatterns`, per pattern (e.g. the token gate refusing). */
  readonly counts = new Map<string, number>();
  starts = 0;
  failedStarts = 0;
  /** When the chaos hit this process and when it came back (epoch ms), for the timeline. */
  readonly history: { atMs: number; kind: 'kill' | 'stop' | 'restart' }[] = [];
  /** When the running process became ready (epoch ms). */
  upSinceMs: number | null = null;

  constructor(
    readonly role: Role,
    readonly index: number,
    readonly port: number | null,
    private readonly environment: SlotEnvironment,
    private readonly countPatterns: Record<string, RegExp> = {},
  ) {
    this.log = createWriteStream(join(environment.logDir, `${role}-${index}.log`), { flags: 'a' });
  }

  get name(): string {
    return `${this.role} ${this.index}`;
  }

  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  get url(): string | null {
    return this.port === null ? null : `http://127.0.0.1:${this.port}`;
  }

  /**
   * Starts the process and resolves once it is ready (the API listens; the worker
   * claims). A start can fail while PostgreSQL restarts: it is retried until `deadline`.
   */
  async start(deadline = Date.now() + 60_000): Promise<void> {
    // One process per slot: a restart already under way (after a crash) is enough.
    if (this.state !== 'down' || this.closed) return;
    for (;;) {
      try {
        await this.startOnce();
        return;
      } catch (error) {
        this.failedStarts += 1;
        if (Date.now() > deadline || this.closed) throw error;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  }

  private startOnce(): Promise<void> {
    this.state = 'starting';
    this.starts += 1;
    this.expectingExit = false;
    const env: Record<string, string> = { ...this.environment.env };
    if (this.port !== null) env.PARLEY_PORT = String(this.port);
    const child = spawn(process.execPath, ['dist/cli/main.js', this.role], {
      cwd: this.environment.root,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    this.log.write(`--- start ${this.starts} (pid ${child.pid}) at ${new Date().toISOString()}\n`);
    const ready = this.role === 'api' ? /listening on / : /worker claiming up to/;
    return new Promise<void>((resolve, reject) => {
      let isReady = false;
      child.stdout?.setEncoding('utf8');
      child.stderr?.setEncoding('utf8');
      child.stdout?.on('data', (chunk: string) => {
        this.log.write(chunk);
        this.lineBuffer += chunk;
        let newline: number;
        while ((newline = this.lineBuffer.indexOf('\n')) >= 0) {
          const line = this.lineBuffer.slice(0, newline);
          this.lineBuffer = this.lineBuffer.slice(newline + 1);
          for (const [name, pattern] of Object.entries(this.countPatterns)) {
            if (pattern.test(line)) this.counts.set(name, (this.counts.get(name) ?? 0) + 1);
          }
          if (!isReady && ready.test(line)) {
            isReady = true;
            this.state = 'up';
            this.upSinceMs = Date.now();
            if (this.starts > 1) this.history.push({ atMs: this.upSinceMs, kind: 'restart' });
            resolve();
          }
        }
      });
      child.stderr?.on('data', (chunk: string) => this.log.write(chunk));
      this.exitPromise = new Promise<void>((resolveExit) => {
        child.once('exit', (code, signal) => {
          this.log.write(`--- exit code ${code} signal ${signal} at ${new Date().toISOString()}\n`);
          if (this.child === child) {
            this.child = null;
            this.state = 'down';
          }
          if (!isReady) reject(new Error(`${this.name} exited before it was ready (code ${code})`));
          else if (!this.expectingExit) {
            this.unexpectedExits.push({ code, signal });
            this.restartAfterCrash();
          }
          resolveExit();
        });
      });
    });
  }

  private restartAfterCrash(): void {
    setTimeout(() => {
      if (this.state === 'down' && !this.closed) {
        this.start().catch((error: unknown) => {
          this.log.write(`--- restart after crash failed: ${(error as Error).message}\n`);
        });
      }
    }, 1_000);
  }

  /** Waits out a start under way, then makes sure the process runs and is not paused. */
  async ensureUp(): Promise<void> {
    while (this.state === 'starting') await new Promise((resolve) => setTimeout(resolve, 100));
    if (this.state === 'paused') this.resume();
    if (this.state === 'down') await this.start();
  }

  /** SIGKILL, and wait until the process is gone. */
  async kill(): Promise<void> {
    if (!this.child) return;
    this.expectingExit = true;
    if (!this.closed) this.history.push({ atMs: Date.now(), kind: 'kill' });
    this.child.kill('SIGKILL');
    await this.exitPromise;
  }

  pause(): void {
    if (this.state !== 'up' || !this.child) return;
    this.child.kill('SIGSTOP');
    this.history.push({ atMs: Date.now(), kind: 'stop' });
    this.state = 'paused';
  }

  resume(): void {
    if (this.state !== 'paused' || !this.child) return;
    this.child.kill('SIGCONT');
    this.state = 'up';
  }

  /** SIGTERM (a paused process is resumed first) and wait; returns how it ended. */
  async terminate(timeoutMs = 30_000): Promise<{ code: number | null; signal: string | null }> {
    const child = this.child;
    if (!child) return { code: 0, signal: null };
    this.resume();
    this.expectingExit = true;
    const ended = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
      child.once('exit', (code, signal) => resolve({ code, signal })),
    );
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    const result = await ended;
    clearTimeout(timer);
    await this.exitPromise;
    return result;
  }

  /** The end of the run: no restart any more, the process (if any) killed, the log closed. */
  async close(): Promise<void> {
    this.closed = true;
    await this.kill();
    this.log.end();
  }
}
