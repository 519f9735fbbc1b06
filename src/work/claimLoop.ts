import type { Logger } from '../log.js';
import type { Wakeup, Wakeups } from '../store/wakeups.js';
import { abortableDelay, cancellableDelay, drainWithin } from '../time/abortable.js';

/** What a running handler is told: stop between units of work, or stop at once. */
export interface HandlerControl {
  /** A graceful stop began: finish the unit in hand, start no other. */
  readonly shutdown: AbortSignal;
  /** The grace period ran out: abort what is running and give the lease back. */
  readonly hardStop: AbortSignal;
}

/**
 * A kind of leased work: its own table and claim statement, its handler. The engine knows
 * nothing else about it.
 */
export interface ClaimKind<T> {
  /** Names the kind in logs. */
  readonly name: string;
  /** The most items handled at once (`runtime.max_parallel_turns`, ...). */
  readonly capacity: number;
  /** Takes up to `limit` due items, each under a fresh lease token; none is `[]`. */
  claim(limit: number): Promise<T[]>;
  /** Milliseconds until the earliest item falls due, when a claim found none (null: none waits). */
  nextDueMs?(): Promise<number | null>;
  /** Whether a wake-up concerns this kind; call `wake` (now or later) to claim at once. */
  onWakeup(wakeup: Wakeup, wake: () => void): void;
  /** Runs one claimed item under its lease; a failure it throws is logged. */
  handle(item: T, control: HandlerControl): Promise<void>;
  /** Names an item in logs (a failed handler). */
  describe(item: T): Record<string, unknown>;
}

export interface ClaimLoopOptions {
  wakeups: Wakeups;
  log: Logger;
  /** Longest sleep: the sweep that covers lost wake-ups and dead workers' leases (runtime.poll_ms). */
  pollMs: number;
  /** How long running handlers get to finish on stop (runtime.shutdown_grace_ms). */
  graceMs: number;
}

/**
 * The engine's claim loop, one per kind. States: `running` (claiming while below the
 * kind's capacity, else waiting for a slot), `idle-waiting` (nothing claimable: sleeps
 * until a wake-up, the earliest due item, or the poll interval, which also covers lost
 * wake-ups and expired leases of dead workers), `stopping` (no more claims; running
 * handlers finish within the grace period, then `hardStop` aborts them and they release
 * their leases), `stopped`.
 */
export class ClaimLoop<T> {
  private readonly active = new Set<Promise<void>>();
  private readonly shutdown = new AbortController();
  private readonly hardStop = new AbortController();
  private wake = new AbortController();
  private loop: Promise<void> | null = null;
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly kind: ClaimKind<T>,
    private readonly options: ClaimLoopOptions,
  ) {}

  start(): void {
    if (this.loop) return;
    this.unsubscribe = this.options.wakeups.subscribe((wakeup) =>
      this.kind.onWakeup(wakeup, () => this.wake.abort()),
    );
    this.loop = this.run();
  }

  /** Items being handled now. */
  get size(): number {
    return this.active.size;
  }

  /** Graceful stop: see the states above. Resolves when every handler has ended. */
  async stop(): Promise<void> {
    if (this.shutdown.signal.aborted) return this.loop ?? undefined;
    this.shutdown.abort();
    this.wake.abort();
    this.unsubscribe?.();
    await this.loop;
    await drainWithin(this.active, this.options.graceMs, this.hardStop.signal, () => {
      this.options.log.warn(
        { kind: this.kind.name, running: this.active.size },
        'grace period over; aborting running work',
      );
      this.hardStop.abort(new Error('shutdown grace period over'));
    });
  }

  private async run(): Promise<void> {
    const { pollMs } = this.options;
    const control = { shutdown: this.shutdown.signal, hardStop: this.hardStop.signal };
    while (!this.shutdown.signal.aborted) {
      const free = this.kind.capacity - this.active.size;
      if (free <= 0) {
        const delay = cancellableDelay(pollMs, this.shutdown.signal);
        await Promise.race([...this.active, delay.done]);
        delay.cancel();
        continue;
      }
      // A wake-up that arrives while we claim must not be lost: re-arm before claiming.
      this.wake = new AbortController();
      let claimed: T[];
      let sleepMs = pollMs;
      try {
        claimed = await this.kind.claim(free);
        if (claimed.length === 0 && this.kind.nextDueMs) {
          const next = await this.kind.nextDueMs();
          if (next !== null) sleepMs = Math.min(sleepMs, Math.max(1, next));
        }
      } catch (error) {
        this.options.log.error(
          { kind: this.kind.name, err: (error as Error).message },
          'claim failed; retrying after the poll interval',
        );
        await abortableDelay(pollMs, this.shutdown.signal);
        continue;
      }
      for (const item of claimed) {
        // No claim is due when a handler ends: a loop that was full resumes then, and an
        // item given back with work left announces itself through the wake-ups.
        const handled = this.kind
          .handle(item, control)
          .catch((error: unknown) => {
            this.options.log.error(
              { kind: this.kind.name, ...this.kind.describe(item), err: (error as Error).message },
              'handler failed',
            );
          })
          .finally(() => this.active.delete(handled));
        this.active.add(handled);
      }
      if (claimed.length === 0) {
        await abortableDelay(sleepMs, AbortSignal.any([this.wake.signal, this.shutdown.signal]));
      }
    }
  }
}
