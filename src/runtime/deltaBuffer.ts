import type { Db } from '../store/db.js';
import { appendEvents } from '../store/appendEvents.js';
import type { Lease } from '../store/types.js';

/**
 * Journals text deltas in small batches (RUNTIME.md: at most 50 ms or 4 KiB), each batch
 * one `text_delta` event in one token-gated transaction, committed before it is published.
 * Writes are chained so batches land in order; the first failure (a lost lease) is kept
 * and rethrown to the producer at its next push or flush.
 */
export class DeltaBuffer {
  private pending = '';
  private timer: NodeJS.Timeout | null = null;
  private chain: Promise<void> = Promise.resolve();
  private failure: Error | null = null;
  private started = false;
  /** True once any text of this attempt is durable (a retry then needs attempt_reset). */
  wroteText = false;

  constructor(
    private readonly db: Db,
    private readonly lease: Lease,
    private readonly turnId: string,
    private readonly limits: { batchMs: number; batchBytes: number },
    private readonly onFailure: (error: unknown) => void,
  ) {}

  push(delta: string): void {
    if (this.failure) throw this.failure;
    this.pending += delta;
    // The first text of a call goes out at once: time to first token is what a person
    // notices. Later deltas are batched (at most batchMs old or batchBytes large).
    const first = !this.started;
    this.started = true;
    if (first || Buffer.byteLength(this.pending) >= this.limits.batchBytes) this.schedule(0);
    else if (!this.timer) this.schedule(this.limits.batchMs);
  }

  /** Writes whatever is pending and waits for every earlier batch. */
  async flush(): Promise<void> {
    this.writePending();
    await this.chain;
    if (this.failure) throw this.failure;
  }

  /**
   * Drops pending text without writing it (the call is being abandoned) and waits for
   * batches already on their way, so `wroteText` is final. A lost lease still throws.
   */
  async settle(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.pending = '';
    await this.chain;
    if (this.failure) throw this.failure;
  }

  private schedule(ms: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.writePending(), ms);
  }

  private writePending(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.pending.length === 0 || this.failure) return;
    const delta = this.pending;
    this.pending = '';
    this.chain = this.chain.then(async () => {
      if (this.failure) return;
      try {
        await this.db.transaction((tx) =>
          appendEvents(
            tx,
            this.lease,
            [{ type: 'text_delta', turn_id: this.turnId, payload: { delta } }],
            {
              progress: true,
              partialOutput: true,
            },
          ),
        );
        this.wroteText = true;
      } catch (error) {
        this.failure = error instanceof Error ? error : new Error(String(error));
        this.onFailure(error);
      }
    });
  }
}
