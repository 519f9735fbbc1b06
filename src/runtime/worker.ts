import { newLeaseToken } from '../ids.js';
import { claimSession } from '../store/claimSession.js';
import { abortableDelay, cancellableDelay, drainWithin } from '../time/abortable.js';
import type { RuntimeDeps } from './deps.js';
import { drainSession, maxBurst } from './drain.js';

/**
 * The claim loop. States: `running` (claiming while below max_parallel_turns, else
 * waiting for a slot), `idle-waiting` (nothing claimable: sleeps until an input wake-up
 * or the poll interval, which also covers lost notifications and expired leases of dead
 * workers), `stopping` (no more claims; running drains finish their burst within the
 * grace period, then are aborted and release their leases), `stopped`.
 */
export class Worker {
  private readonly active = new Set<Promise<void>>();
  private readonly shutdown = new AbortController();
  private readonly hardStop = new AbortController();
  private wake = new AbortController();
  private loop: Promise<void> | null = null;
  private unsubscribe: (() => void) | null = null;

  constructor(private readonly deps: RuntimeDeps) {}

  start(): void {
    if (this.loop) return;
    this.unsubscribe = this.deps.wakeups.subscribe((wakeup) => {
      if (wakeup.kind === 'input') this.wake.abort();
    });
    this.loop = this.run();
  }

  get activeSessions(): number {
    return this.active.size;
  }

  /** Graceful stop (SIGTERM): see the states above. Resolves when every lease is released. */
  async stop(): Promise<void> {
    if (this.shutdown.signal.aborted) return this.loop ?? undefined;
    this.shutdown.abort();
    this.wake.abort();
    this.unsubscribe?.();
    await this.loop;
    await drainWithin(
      this.active,
      this.deps.config.runtime.shutdownGraceMs,
      this.hardStop.signal,
      () => {
        this.deps.log.warn(
          { sessions: this.active.size },
          'grace period over; aborting running turns',
        );
        this.hardStop.abort();
      },
    );
  }

  private async run(): Promise<void> {
    const { runtime } = this.deps.config;
    while (!this.shutdown.signal.aborted) {
      if (this.active.size >= runtime.maxParallelTurns) {
        const delay = cancellableDelay(runtime.pollMs, this.shutdown.signal);
        await Promise.race([...this.active, delay.done]);
        delay.cancel();
        continue;
      }
      // A wake-up that arrives while we claim must not be lost: re-arm before claiming.
      this.wake = new AbortController();
      let claimed;
      try {
        claimed = await claimSession(this.deps.db, {
          token: newLeaseToken(),
          owner: this.deps.owner,
          ttlMs: runtime.leaseTtlMs,
          maxTurns: maxBurst,
        });
      } catch (error) {
        this.deps.log.error(
          { err: (error as Error).message },
          'claim failed; retrying after the poll interval',
        );
        await abortableDelay(runtime.pollMs, this.shutdown.signal);
        continue;
      }
      if (!claimed) {
        await abortableDelay(
          runtime.pollMs,
          AbortSignal.any([this.wake.signal, this.shutdown.signal]),
        );
        continue;
      }
      const drain = drainSession(this.deps, claimed, {
        shutdown: this.shutdown.signal,
        hardStop: this.hardStop.signal,
      })
        .catch((error: unknown) => {
          this.deps.log.error(
            { session_id: claimed.session_id, err: (error as Error).message },
            'drain failed',
          );
        })
        .finally(() => {
          // No claim is due here: a loop that was full resumes when a drain ends, and a
          // session given back with input still queued announces itself (releaseLease).
          this.active.delete(drain);
        });
      this.active.add(drain);
    }
  }
}
