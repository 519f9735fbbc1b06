import { newEvent } from '../protocol/events.js';
import { appendEvents } from '../store/appendEvents.js';
import type { Db } from '../store/db.js';
import type { Lease } from '../store/types.js';
import { wellFormed } from './text.js';

/**
 * Journals text deltas in small batches (RUNTIME.md: at most 50 ms or 4 KiB), each batch
 * one `text_delta` event in one token-gated statement, committed before it is published.
 * The first text of a call is written on the next turn of the event loop (time to first
 * token is what a person notices); later text is batched. Whatever is still pending when
 * the step ends is not written here: the caller takes it (`tail`) into the statement that
 * closes the step, so a short reply costs no write of its own. Writes are chained so
 * batches land in order; the first failure (a lost lease) is kept and rethrown to the
 * producer at its next push, tail or settle.
 */
export class DeltaBuffer {
  private pending = '';
  private timer: NodeJS.Timeout | null = null;
  private immediate: NodeJS.Immediate | null = null;
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
  ) {}

  push(delta: string): void {
    if (this.failure) throw this.failure;
    this.pending += wellFormed(delta);
    if (!this.started) {
      this.started = true;
      this.immediate = setImmediate(() => this.writePending());
    } else if (Buffer.byteLength(this.pending) >= this.limits.batchBytes) {
      this.writePending();
    } else if (!this.timer && !this.immediate) {
      this.timer = setTimeout(() => this.writePending(), this.limits.batchMs);
    }
  }

  /**
   * Waits for every batch already on its way and hands over the text not written yet
   * (the caller journals it in the statement that closes the step).
   */
  async tail(): Promise<string> {
    this.cancelTimers();
    await this.chain;
    if (this.failure) throw this.failure;
    const tail = this.pending;
    this.pending = '';
    return tail;
  }

  /**
   * Drops pending text without writing it (the call is being abandoned) and waits for
   * batches already on their way, so `wroteText` is final. A lost lease still throws.
   */
  async settle(): Promise<void> {
    this.cancelTimers();
    this.pending = '';
    await this.chain;
    if (this.failure) throw this.failure;
  }

  private cancelTimers(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.immediate) clearImmediate(this.immediate);
    this.timer = null;
    this.immediate = null;
  }

  private writePending(): void {
    this.cancelTimers();
    if (this.pending.length === 0 || this.failure) return;
    const delta = this.pending;
    this.pending = '';
    this.chain = this.chain.then(async () => {
      if (this.failure) return;
      try {
        await appendEvents(this.db, this.lease, [newEvent('text_delta', this.turnId, { delta })], {
          progress: true,
          partialOutput: true,
        });
        this.wroteText = true;
      } catch (error) {
        this.failure = error instanceof Error ? error : new Error(String(error));
      }
    });
  }
}
