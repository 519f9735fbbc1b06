import type { ParleyEvent } from '../protocol/events.js';
import { readEvents } from '../store/readEvents.js';
import type { Db } from '../store/db.js';
import type { FeedSubscriber, JournalFeed } from './feed.js';

const pageSize = 500;

/** What an adapter does with each event it follows (a fold's `apply`, say). */
type Apply = (event: ParleyEvent) => void | Promise<void>;

async function applyAll(events: ParleyEvent[], apply: Apply): Promise<void> {
  for (const event of events) {
    const applied = apply(event);
    if (applied) await applied;
  }
}

/**
 * Follows one session's journal from a cursor for an adapter that answers in another
 * protocol (docs/protocols.md): each call of `next()` returns the events after the cursor,
 * read from the journal, or waits for the process's feed to say there are more (its poll
 * covers a lost wake-up). Never skips or repeats an event: the cursor moves only past
 * what was returned, and the events are read back in order from the journal itself.
 */
export class JournalFollower implements FeedSubscriber {
  private wake: (() => void) | null = null;
  private known = 0;
  private gone = false;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly db: Db,
    feed: JournalFeed,
    private readonly sessionId: string,
    private cursor: number,
  ) {
    this.unsubscribe = feed.subscribe(sessionId, this);
  }

  /** The next events after the cursor; empty when `signal` aborts or the session is gone. */
  private async next(signal: AbortSignal): Promise<ParleyEvent[]> {
    for (;;) {
      if (signal.aborted || this.gone) return [];
      const seen = this.known;
      const events = await readEvents(this.db, this.sessionId, this.cursor, pageSize);
      if (events.length > 0) {
        this.cursor = (events.at(-1) as ParleyEvent).sequence;
        return events;
      }
      // A wake-up that came while reading may name events the read did not see yet.
      if (this.known > seen) continue;
      await new Promise<void>((resolve) => {
        const done = () => {
          signal.removeEventListener('abort', done);
          this.wake = null;
          resolve();
        };
        this.wake = done;
        signal.addEventListener('abort', done, { once: true });
        // Aborted or closed while the read was under way: no listener will be told.
        if (signal.aborted || this.gone) done();
      });
    }
  }

  /**
   * Waits for events after the cursor, then gives `apply` them and every other event the
   * journal has by then (a step journals its events in one commit: when this returns, all
   * of it was applied). False when it stopped without any: `signal` aborted or the
   * session is gone.
   */
  async take(signal: AbortSignal, apply: Apply): Promise<boolean> {
    const events = await this.next(signal);
    if (events.length === 0) return false;
    await applyAll(events, apply);
    await this.drain(apply);
    return true;
  }

  /** Gives `apply` every event after the cursor that is in the journal now, in order. */
  async drain(apply: Apply): Promise<void> {
    for (;;) {
      const events = await this.readAvailable();
      if (events.length === 0) return;
      await applyAll(events, apply);
    }
  }

  /** The events after the cursor that are in the journal now (one page; empty: none). */
  private async readAvailable(): Promise<ParleyEvent[]> {
    if (this.gone) return [];
    const events = await readEvents(this.db, this.sessionId, this.cursor, pageSize);
    if (events.length > 0) this.cursor = (events.at(-1) as ParleyEvent).sequence;
    return events;
  }

  close(): void {
    this.unsubscribe();
    this.gone = true;
    this.wake?.();
  }

  offer(latest: number): void {
    if (latest > this.known) this.known = latest;
    if (latest > this.cursor) this.wake?.();
  }

  typing(): void {}

  recheck(): void {
    this.wake?.();
  }

  end(): void {
    this.gone = true;
    this.wake?.();
  }
}
