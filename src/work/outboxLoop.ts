import { newLeaseToken } from '../ids.js';
import type { Logger } from '../log.js';
import type { Wakeups } from '../store/wakeups.js';
import { startTimedLoop } from './timedLoop.js';

/** Every this many sweeps, the sweep looks at every session, not only recently active ones. */
export const fullSweepEvery = 60;
/** The shortest sleep before a due item (a retry, an edit): keeps a busy outbox from spinning. */
const minSleepMs = 20;

/**
 * A kind of outbox work: rows derived from the journal (followed per session), claimed in
 * batches under a lease token, sent, and recorded with backoff and dead letters by the
 * kind's own statements. `F` is what is followed (a session, or a session for one
 * endpoint), `T` a claimed row.
 */
export interface OutboxKind<F, T> {
  /** Names the kind in logs. */
  readonly name: string;
  /** Rows one claim takes, sent concurrently. */
  readonly batchSize: number;
  /**
   * What is behind the journal: among `sessionIds` (wake-ups), else sessions active in the
   * last `recentMs` (null: all of them), at most `limit`.
   */
  behind(input: { sessionIds?: string[]; recentMs: number | null; limit: number }): Promise<F[]>;
  /** Identifies a followed thing, so one round follows it once. */
  key(followed: F): string;
  /** Follows the journal one batch further: `more` when it must be called again. */
  follow(followed: F): Promise<{ changed: boolean; more: boolean }>;
  /** Readies the kind before its first send (called every round; cheap once ready). */
  prepare?(): Promise<void>;
  /** Claims up to `limit` due rows under `token`. */
  claim(token: string, limit: number): Promise<T[]>;
  /** Sends one row and records the outcome under `token`; never throws. */
  send(row: T, token: string): Promise<void>;
  /** Work of the round after sending (`followed`: this round changed rows). */
  afterSend?(followed: boolean, stop: AbortSignal): Promise<void>;
  /** Milliseconds until the next row is due, or null when none waits. */
  nextDueMs(): Promise<number | null>;
  /** Waits for the kind's own calls still out, once the loop has stopped. */
  stopped?(): Promise<void>;
}

export interface OutboxLoopOptions {
  wakeups: Wakeups;
  log: Logger;
  /** Longest sleep and the sweep's period: covers lost wake-ups (runtime.poll_ms). */
  pollMs: number;
}

/**
 * The engine's outbox loop, one per kind (a worker-role process runs them), on the timed
 * loop (timedLoop.ts). States: `round` (follow the journal of sessions that woke up, and once per poll interval of the
 * sessions the sweep finds behind; then claim and send batches until a short one; then
 * the kind's after-send work), `sleeping` (until a wake-up, the next due row, or the poll
 * interval; a wake-up during the round starts the next one at once), `stopped` (`stop()`
 * ends the sleep, waits for the round in progress and the kind's calls). Everything it
 * knows is in the database, so a crash loses nothing: the next process follows from the
 * stored positions and sends every row not yet confirmed.
 */
export function startOutboxLoop<F, T>(
  kind: OutboxKind<F, T>,
  options: OutboxLoopOptions,
): { stop: () => Promise<void> } {
  const stopped = new AbortController();
  // The dirty set: sessions that woke up since the last round.
  const dirty = new Set<string>();

  let sweeps = 0;
  let lastSweep = 0;
  /** Follows what woke up, and what the sweep finds; true when any row changed. */
  const follow = async (): Promise<boolean> => {
    const targets = new Map<string, F>();
    const woken = [...dirty];
    dirty.clear();
    if (woken.length > 0) {
      const found = await kind.behind({ sessionIds: woken, recentMs: null, limit: woken.length });
      for (const target of found) targets.set(kind.key(target), target);
    }
    // The sweep (for lost wake-ups) runs once per poll interval, however many wake-ups.
    if (Date.now() - lastSweep >= options.pollMs) {
      lastSweep = Date.now();
      sweeps += 1;
      const recentMs = sweeps % fullSweepEvery === 1 ? null : options.pollMs * 30;
      for (const target of await kind.behind({ recentMs, limit: 200 })) {
        targets.set(kind.key(target), target);
      }
    }
    let changed = false;
    // A stop ends the round between statements: what is left is stored, and the next
    // process follows from the stored positions.
    for (const target of targets.values()) {
      for (;;) {
        if (stopped.signal.aborted) return changed;
        const result = await kind.follow(target);
        if (result.changed) changed = true;
        if (!result.more) break;
      }
    }
    return changed;
  };

  const send = async () => {
    while (!stopped.signal.aborted) {
      const token = newLeaseToken();
      const rows = await kind.claim(token, kind.batchSize);
      if (rows.length === 0) return;
      await Promise.all(rows.map((row) => kind.send(row, token)));
      if (rows.length < kind.batchSize) return;
    }
  };

  const loop = startTimedLoop({
    name: kind.name,
    log: options.log,
    pollMs: options.pollMs,
    minSleepMs,
    round: async () => {
      const followed = await follow();
      if (stopped.signal.aborted) return { dueMs: null };
      await kind.prepare?.();
      await send();
      await kind.afterSend?.(followed, stopped.signal);
      return { dueMs: await kind.nextDueMs() };
    },
  });
  const unsubscribe = options.wakeups.subscribe((wakeup) => {
    if (wakeup.kind === 'typing') return;
    dirty.add(wakeup.sessionId);
    loop.wake();
  });

  return {
    stop: async () => {
      stopped.abort();
      unsubscribe();
      await loop.stop();
      await kind.stopped?.();
    },
  };
}
