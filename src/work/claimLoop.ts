import type { Logger } from '../log.js';
import type { Wakeup, Wakeups } from '../store/wakeups.js';
import { drainWithin } from '../time/abortable.js';
import { startTimedLoop, type RoundOutcome, type TimedLoop } from './timedLoop.js';

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

/**
 * A slot of the loop's capacity held for an item claimed elsewhere in the process (an
 * admission that claims its session): `adopt` runs the item's handler in it, `release`
 * gives it back unused. Either, once.
 */
export interface Slot<T> {
  adopt(item: T): void;
  release(): void;
}

export interface ClaimLoopOptions {
  wakeups: Wakeups;
  log: Logger;
  /** Longest sleep: the sweep that covers lost wake-ups and dead workers' leases (runtime.poll_ms). */
  pollMs: number;
  /** How long running handlers get to finish on stop (runtime.shutdown_grace_ms). */
  graceMs: number;
}

/** A process's claim-loop options, from its runtime configuration. */
export function claimLoopOptions(deps: {
  wakeups: Wakeups;
  log: Logger;
  config: { runtime: { pollMs: number; shutdownGraceMs: number } };
}): ClaimLoopOptions {
  const { pollMs, shutdownGraceMs } = deps.config.runtime;
  return { wakeups: deps.wakeups, log: deps.log, pollMs, graceMs: shutdownGraceMs };
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
  private loop: TimedLoop | null = null;
  private stopping: Promise<void> | null = null;
  private unsubscribe: (() => void) | null = null;
  /** Slots held for items claimed elsewhere (`reserve`). */
  private reserved = 0;
  /** The free capacity a claim under way may fill. */
  private pledged = 0;
  /** Resolves when a held slot is adopted or released (a full loop waits for it). */
  private slotChange: { promise: Promise<void>; resolve: () => void } = changeSignal();

  constructor(
    private readonly kind: ClaimKind<T>,
    private readonly options: ClaimLoopOptions,
  ) {}

  start(): void {
    if (this.loop || this.shutdown.signal.aborted) return;
    const loop = startTimedLoop({
      name: this.kind.name,
      log: this.options.log,
      pollMs: this.options.pollMs,
      minSleepMs: 1,
      round: () => this.round(),
    });
    this.loop = loop;
    this.unsubscribe = this.options.wakeups.subscribe((wakeup) =>
      this.kind.onWakeup(wakeup, () => loop.wake()),
    );
  }

  /**
   * Holds a slot for an item this process claims itself, outside the loop's claims; null
   * when the loop is stopped or stopping, or none is free (counting the capacity a claim
   * under way may fill, so the kind's capacity is never exceeded).
   */
  reserve(): Slot<T> | null {
    if (!this.loop || this.shutdown.signal.aborted) return null;
    if (this.active.size + this.reserved + this.pledged >= this.kind.capacity) return null;
    this.reserved += 1;
    let open = true;
    const close = () => {
      if (!open) return false;
      open = false;
      this.reserved -= 1;
      const changed = this.slotChange;
      this.slotChange = changeSignal();
      changed.resolve();
      return true;
    };
    return {
      adopt: (item) => {
        if (close()) this.run(item);
      },
      release: () => void close(),
    };
  }

  /** Items being handled now. */
  get size(): number {
    return this.active.size;
  }

  /** Graceful stop: see the states above. Resolves when every handler has ended. */
  stop(): Promise<void> {
    this.stopping ??= this.drain();
    return this.stopping;
  }

  /**
   * Every item in hand at the stop either finishes its unit of work within the grace
   * period (then gives its lease back, with any work left announced for another process)
   * or is aborted when it runs out and gives its lease back at once: another process
   * resumes it without waiting for the lease to expire. The log says how many of each.
   */
  private async drain(): Promise<void> {
    // In hand: what runs as the stop begins, and what a round already under way claims.
    const inHand = new Set(this.active);
    this.shutdown.abort();
    this.unsubscribe?.();
    await this.loop?.stop();
    for (const handled of this.active) inHand.add(handled);
    const running = inHand.size;
    let handedOver = 0;
    await drainWithin(this.active, this.options.graceMs, this.hardStop.signal, () => {
      handedOver = this.active.size;
      this.options.log.warn(
        { kind: this.kind.name, running: handedOver },
        'grace period over; aborting running work',
      );
      this.hardStop.abort(new Error('shutdown grace period over'));
    });
    if (running > 0) {
      this.options.log.info(
        {
          kind: this.kind.name,
          running,
          finished: running - handedOver,
          handed_over: handedOver,
          grace_ms: this.options.graceMs,
        },
        'stopped: work in hand finished, or aborted and handed over with its lease released',
      );
    }
  }

  /** Claims up to the free capacity and starts a handler per item. */
  private async round(): Promise<RoundOutcome> {
    const free = this.kind.capacity - this.active.size - this.reserved;
    // Full: the next round comes when a handler ends or a held slot is given back (or at
    // the poll interval).
    if (free <= 0) return { orWhen: Promise.race([...this.active, this.slotChange.promise]) };
    this.pledged = free;
    let claimed: T[];
    try {
      claimed = await this.kind.claim(free);
    } finally {
      this.pledged = 0;
    }
    for (const item of claimed) this.run(item);
    // As many as there was room for: the next round waits for a slot. Fewer: nothing else
    // was claimable, so another claim now would find nothing (with several processes, one
    // such claim per process per wake-up); a wake-up or the poll brings the next round.
    if (claimed.length > 0 && claimed.length >= free) return { again: true };
    return { dueMs: this.kind.nextDueMs ? await this.kind.nextDueMs() : null };
  }

  /** Runs an item's handler in a slot of the capacity until it ends. */
  private run(item: T): void {
    const control = { shutdown: this.shutdown.signal, hardStop: this.hardStop.signal };
    // No claim is due when a handler ends: a loop that was full resumes then, and an item
    // given back with work left announces itself through the wake-ups.
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
}

function changeSignal(): { promise: Promise<void>; resolve: () => void } {
  let resolve = () => {};
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}
