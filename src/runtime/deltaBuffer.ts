import { newEvent, type NewEvent } from '../protocol/events.js';
import { appendEvents } from '../store/appendEvents.js';
import type { Db } from '../store/db.js';
import type { Lease } from '../store/types.js';
import { wellFormed } from './text.js';

/** What a model streams: its reply, or its reasoning (journaled apart, never in the reply). */
export type DeltaKind = 'text' | 'reasoning';

interface Segment {
  kind: DeltaKind;
  text: string;
}

/**
 * Journals what a model streams in small batches (RUNTIME.md: at most 50 ms or 4 KiB):
 * `text_delta` events for the reply, `reasoning_delta` for its reasoning, in the order the
 * model produced them, each batch in one token-gated statement committed before it is
 * published. The first output of a call is written on the next turn of the event loop
 * (time to first token is what a person notices); later output is batched. Whatever is
 * still pending when the step ends is not written here: the caller takes it (`tail`) into
 * the statement that closes the step, so a short reply costs no write of its own. Writes
 * are chained so batches land in order; the first failure (a lost lease) is kept and
 * rethrown to the producer at its next push, tail or settle.
 */
export class DeltaBuffer {
  private pending: Segment[] = [];
  private pendingBytes = 0;
  private timer: NodeJS.Timeout | null = null;
  private immediate: NodeJS.Immediate | null = null;
  private chain: Promise<void> = Promise.resolve();
  private failure: Error | null = null;
  private started = false;
  /** Characters pushed so far (for estimating the usage of a call that broke off). */
  pushedChars = 0;
  /** True once any output of this attempt is durable (a retry then needs attempt_reset). */
  wroteText = false;

  constructor(
    private readonly db: Db,
    private readonly lease: Lease,
    private readonly turnId: string,
    private readonly limits: { batchMs: number; batchBytes: number },
  ) {}

  push(delta: string, kind: DeltaKind = 'text'): void {
    if (this.failure) throw this.failure;
    const text = wellFormed(delta);
    this.pushedChars += text.length;
    const last = this.pending.at(-1);
    if (last?.kind === kind) last.text += text;
    else this.pending.push({ kind, text });
    this.pendingBytes += Buffer.byteLength(text);
    if (!this.started) {
      this.started = true;
      this.immediate = setImmediate(() => this.writePending());
    } else if (this.pendingBytes >= this.limits.batchBytes) {
      this.writePending();
    } else if (!this.timer && !this.immediate) {
      this.timer = setTimeout(() => this.writePending(), this.limits.batchMs);
    }
  }

  /**
   * Waits for every batch already on its way and hands over what is not written yet, as
   * the events the caller journals in the statement that closes the step.
   */
  async tail(): Promise<NewEvent[]> {
    this.cancelTimers();
    await this.chain;
    if (this.failure) throw this.failure;
    return this.take();
  }

  /**
   * Drops pending output without writing it (the call is being abandoned) and waits for
   * batches already on their way, so `wroteText` is final. A lost lease still throws.
   */
  async settle(): Promise<void> {
    this.cancelTimers();
    this.take();
    await this.chain;
    if (this.failure) throw this.failure;
  }

  private take(): NewEvent[] {
    const events = this.pending
      .filter((segment) => segment.text.length > 0)
      .map((segment) =>
        segment.kind === 'text'
          ? newEvent('text_delta', this.turnId, { delta: segment.text })
          : newEvent('reasoning_delta', this.turnId, { delta: segment.text }),
      );
    this.pending = [];
    this.pendingBytes = 0;
    return events;
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
    const events = this.take();
    if (events.length === 0) return;
    this.chain = this.chain.then(async () => {
      if (this.failure) return;
      try {
        await appendEvents(this.db, this.lease, events, { progress: true, partialOutput: true });
        this.wroteText = true;
      } catch (error) {
        this.failure = error instanceof Error ? error : new Error(String(error));
      }
    });
  }
}
