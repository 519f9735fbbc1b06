import { fork, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { CounterSnapshot, Floor } from './server.js';

/** The client's clock: wall-clock milliseconds, sub-millisecond resolution (as the child's). */
export function now(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * The benchmark's handle on the server process (bench/child.ts): its URL, and control calls
 * over IPC. Times the child reports are converted to the client's clock with the measured
 * offset between the two processes' clocks.
 */
export class RemoteServer {
  private nextId = 0;
  private readonly pending = new Map<
    number,
    { resolve: (value: any) => void; reject: (error: Error) => void }
  >();
  /** child clock − client clock, in ms (estimated at start; same machine, so near 0). */
  clockOffsetMs = 0;
  clockOffsetUncertaintyMs = 0;

  private constructor(
    private readonly child: ChildProcess,
    readonly engine: 'pglite' | 'postgres',
    readonly url: URL,
  ) {
    child.on('message', (message: { id?: number; result?: unknown; error?: string }) => {
      if (message.id === undefined) return;
      const waiter = this.pending.get(message.id);
      if (!waiter) return;
      this.pending.delete(message.id);
      if (message.error !== undefined) waiter.reject(new Error(message.error));
      else waiter.resolve(message.result);
    });
    child.on('exit', (code) => {
      for (const waiter of this.pending.values()) {
        waiter.reject(new Error(`the bench server exited (code ${code})`));
      }
      this.pending.clear();
    });
  }

  static async start(storage: { url: string | null; dataDir: string }): Promise<RemoteServer> {
    const here = dirname(fileURLToPath(import.meta.url));
    const child = fork(join(here, 'child.ts'), [], {
      // PARLEY_BENCH_PROFILE_DIR: the server writes a V8 CPU profile there when it closes.
      execArgv: [
        '--import',
        'tsx',
        ...(process.env.PARLEY_BENCH_PROFILE_DIR
          ? ['--cpu-prof', `--cpu-prof-dir=${process.env.PARLEY_BENCH_PROFILE_DIR}`]
          : []),
      ],
      env: { ...process.env, PARLEY_BENCH_STORAGE: JSON.stringify(storage) },
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const ready = await new Promise<{ url: string; engine: 'pglite' | 'postgres' }>(
      (resolve, reject) => {
        const onMessage = (message: { ready?: boolean; url: string; engine: any }) => {
          if (!message.ready) return;
          child.off('exit', onExit);
          child.off('message', onMessage);
          resolve(message);
        };
        const onExit = (code: number | null) =>
          reject(new Error(`the bench server exited before it was ready (code ${code})`));
        child.on('message', onMessage);
        child.once('exit', onExit);
      },
    );
    const server = new RemoteServer(child, ready.engine, new URL(ready.url));
    await server.measureClockOffset();
    return server;
  }

  call<T>(method: string, ...args: unknown[]): Promise<T> {
    const id = ++this.nextId;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.child.send({ id, method, args });
    });
  }

  /** NTP-style: keep the sample with the shortest round trip. */
  private async measureClockOffset(): Promise<void> {
    let best = { rtt: Number.POSITIVE_INFINITY, offset: 0 };
    for (let i = 0; i < 50; i++) {
      const sent = now();
      const child = await this.call<number>('now');
      const received = now();
      const rtt = received - sent;
      if (rtt < best.rtt) best = { rtt, offset: child - (sent + received) / 2 };
    }
    this.clockOffsetMs = best.offset;
    this.clockOffsetUncertaintyMs = best.rtt / 2;
  }

  query<Row = Record<string, any>>(sql: string, params?: unknown[]): Promise<Row[]> {
    return this.call<Row[]>('query', sql, params);
  }

  counters(): Promise<CounterSnapshot> {
    return this.call<CounterSnapshot>('counters');
  }

  floor(): Promise<Floor> {
    return this.call<Floor>('floor');
  }

  startWorker(): Promise<void> {
    return this.call('startWorker');
  }

  stopWorker(): Promise<void> {
    return this.call('stopWorker');
  }

  setModelDelay(ms: number): Promise<void> {
    return this.call('setModelDelay', ms);
  }

  /** A fixed reply instead of the demo's echo; null goes back to the echo. */
  setReply(text: string | null): Promise<void> {
    return this.call('setReply', text);
  }

  /** Note first deltas and text_delta commits (costly: the first-delta phase only). */
  observeDeltas(on: boolean): Promise<void> {
    return this.call('observeDeltas', on);
  }

  /** The model's first delta per turn and text_delta commit times, on the client's clock. */
  async marks(
    turnIds: string[],
    commitKeys: string[],
  ): Promise<{ firstDelta: (number | null)[]; committed: (number | null)[] }> {
    const marks = await this.call<{
      firstDelta: (number | null)[];
      committed: (number | null)[];
    }>('marks', turnIds, commitKeys);
    const shift = (value: number | null) => (value === null ? null : value - this.clockOffsetMs);
    return { firstDelta: marks.firstDelta.map(shift), committed: marks.committed.map(shift) };
  }

  async close(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    await this.call('close').catch(() => {});
    await exited;
  }
}
