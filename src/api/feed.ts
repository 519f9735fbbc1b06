import type { ParleyEvent } from '../protocol/events.js';
import type { Db } from '../store/db.js';
import { sessionsLastSequence } from '../store/sessionsLastSequence.js';
import type { Wakeup, Wakeups } from '../store/wakeups.js';

/** What the feed tells one SSE stream. */
export interface FeedSubscriber {
  /**
   * The session has events up to `latest`; `events`, when the wake-up carried them, are
   * the newest ones, ending at `latest`.
   */
  offer(latest: number, events: ParleyEvent[] | null): void;
  /** A worker holds the session ("assistant is writing…"). */
  typing(): void;
  /** Who may see the session changed: is this stream's principal still one of them? */
  recheck(): void;
  /** The session was deleted: the stream ends. */
  end(): void;
}

/**
 * One process's view of the journal for all of its SSE streams. A stream does not listen
 * or poll by itself: the process's one wake-up subscription tells the streams of that
 * session (with the new events when the wake-up carried them, so nobody re-reads the
 * journal for them), and one poll per interval checks every session that has a stream
 * with one query, which covers lost wake-ups. Idle streams therefore cost nothing per
 * stream but a keep-alive.
 */
export class JournalFeed {
  private readonly sessions = new Map<string, Set<FeedSubscriber>>();
  private readonly unsubscribe: () => void;
  private readonly poller: NodeJS.Timeout;
  private polling = false;

  constructor(
    private readonly db: Db,
    wakeups: Wakeups,
    pollMs: number,
  ) {
    this.unsubscribe = wakeups.subscribe((wakeup) => this.onWakeup(wakeup));
    this.poller = setInterval(() => void this.poll(), pollMs);
    this.poller.unref();
  }

  subscribe(sessionId: string, subscriber: FeedSubscriber): () => void {
    let set = this.sessions.get(sessionId);
    if (!set) this.sessions.set(sessionId, (set = new Set()));
    set.add(subscriber);
    return () => {
      set.delete(subscriber);
      if (set.size === 0) this.sessions.delete(sessionId);
    };
  }

  stop(): void {
    this.unsubscribe();
    clearInterval(this.poller);
  }

  private onWakeup(wakeup: Wakeup): void {
    const subscribers = this.sessions.get(wakeup.sessionId);
    if (!subscribers) return;
    if (wakeup.kind === 'typing') {
      for (const subscriber of subscribers) subscriber.typing();
      return;
    }
    if (wakeup.kind === 'access' || wakeup.kind === 'deleted') {
      for (const subscriber of subscribers) {
        if (wakeup.kind === 'access') subscriber.recheck();
        else subscriber.end();
      }
      return;
    }
    const events = wakeup.events();
    for (const subscriber of subscribers) {
      subscriber.offer(wakeup.sequence, events);
      if (events?.some((event) => event.type === 'turn_started')) subscriber.typing();
    }
  }

  private async poll(): Promise<void> {
    if (this.polling || this.sessions.size === 0) return;
    this.polling = true;
    const asked = [...this.sessions.keys()];
    try {
      const found = await sessionsLastSequence(this.db, asked);
      for (const row of found) {
        for (const subscriber of this.sessions.get(row.session_id) ?? []) {
          subscriber.offer(row.last_sequence, null);
        }
      }
      // A session that is no longer there was deleted (its wake-up may have been lost).
      const present = new Set(found.map((row) => row.session_id));
      for (const sessionId of asked) {
        if (present.has(sessionId)) continue;
        for (const subscriber of this.sessions.get(sessionId) ?? []) subscriber.end();
      }
    } catch {
      // The database is unreachable for now: the next poll tries again.
    } finally {
      this.polling = false;
    }
  }
}
