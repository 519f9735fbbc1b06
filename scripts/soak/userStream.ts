import { readSse } from '../../src/client/sse.js';
import { sleep, type Apis } from './http.js';
import type { Ledger } from './ledger.js';
import type { Random } from './random.js';

/** Stream silence (no frame, no keep-alive) after which the follower reconnects. */
const silenceMs = 8_000;
/** Once told to finish: how long the stream must carry no session event. */
const quietMs = 3_000;
/** Once told to finish: how long it follows at most. */
const tailMs = 60_000;

/** What the user stream delivered, for the checker. */
export interface UserStreamRecord {
  /** The cursor (database clock, ms) the first connection gave: every event since is owed. */
  fromMs: number;
  /** The session events received, by `<session id> <sequence>`: their type. */
  received: Map<string, string>;
  connections: number;
  /** Session events sent twice on one connection (the stream promises never). */
  twiceOnOneConnection: string[];
}

/**
 * Follows the soak principal's user stream (`GET /api/v1/me/events`, docs/PROTOCOL.md,
 * "The user stream") from before the traffic starts until after the drain, across API
 * kills: a connection that ends or goes silent is opened again on the next API process
 * with `Last-Event-ID`, the last cursor it received. An item may come again across a
 * reconnect; on one connection never. The checker holds what it received to the journal:
 * every event of the stream's types journaled since the first cursor arrived.
 */
export class UserStreamFollower {
  readonly record: UserStreamRecord;
  private finishing: number | null = null;
  private lastEventAt = Date.now();
  /** When the open connection said `ready` (null: none open). */
  private readyAt: number | null = null;
  /** Over: the open connection was closed for good. */
  private done = false;
  private running: Promise<void> | null = null;

  constructor(
    private readonly apis: Apis,
    private readonly ledger: Ledger,
    private readonly random: Random,
  ) {
    // A second back: the cursor must not be ahead of the database's clock (same machine).
    this.record = {
      fromMs: Date.now() - 1_000,
      received: new Map(),
      connections: 0,
      twiceOnOneConnection: [],
    };
  }

  start(): this {
    this.running = this.follow();
    return this;
  }

  /** After the drain: follows until the stream has been quiet, then stops. */
  async finish(): Promise<void> {
    this.finishing = Date.now();
    await this.running;
  }

  /** Told to finish, and a connection has been open and quiet since, or the tail is over. */
  private over(): boolean {
    if (this.finishing === null) return false;
    const now = Date.now();
    if (now - this.finishing > tailMs) return true;
    return (
      this.readyAt !== null &&
      now - Math.max(this.readyAt, this.lastEventAt, this.finishing) > quietMs
    );
  }

  private async follow(): Promise<void> {
    let cursor = String(this.record.fromMs);
    for (let connection = 0; !this.done && !this.over(); connection++) {
      if (connection > 0) {
        await sleep(this.random.between(50, Math.min(1_000, 50 * 2 ** Math.min(connection, 5))));
      }
      this.record.connections += 1;
      const controller = new AbortController();
      let heard = Date.now();
      const watch = setInterval(() => {
        if (this.over()) this.done = true;
        if (this.done || Date.now() - heard > silenceMs) controller.abort();
      }, 250);
      const seen = new Set<string>();
      this.readyAt = null;
      try {
        const response = await fetch(`${this.apis.pick()}/api/v1/me/events`, {
          headers: { accept: 'text/event-stream', 'last-event-id': cursor },
          signal: controller.signal,
        });
        if (response.status !== 200 || !response.body) {
          await response.body?.cancel().catch(() => {});
          // 429: the principal's streams of that process are all open; another try waits.
          if (response.status < 500 && response.status !== 429) {
            this.ledger.violation('user stream', `answered ${response.status}`);
            return;
          }
          continue;
        }
        for await (const frame of readSse(response.body)) {
          heard = Date.now();
          if (frame.kind !== 'message') continue;
          if (frame.event === 'ready') this.readyAt = Date.now();
          if (frame.event === 'resync') {
            this.ledger.violation('user stream', `resync at cursor ${cursor}`);
            return;
          }
          if (frame.event === 'session_event') {
            const item = JSON.parse(frame.data) as {
              session_id: string;
              event: { sequence: number; type: string };
            };
            const key = `${item.session_id} ${item.event.sequence}`;
            if (seen.has(key)) this.record.twiceOnOneConnection.push(key);
            seen.add(key);
            this.record.received.set(key, item.event.type);
            this.lastEventAt = Date.now();
          }
          if (frame.id !== null) cursor = frame.id;
        }
      } catch {
        // Dropped, silent or killed: the next connection resumes from the cursor.
      } finally {
        clearInterval(watch);
        this.readyAt = null;
      }
    }
  }
}
