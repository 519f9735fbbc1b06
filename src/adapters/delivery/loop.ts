import { newLeaseToken } from '../../ids.js';
import type { Logger } from '../../log.js';
import type { PlatformName } from '../../config/platformTypes.js';
import { abortableDelay, withDeadline } from '../../time/abortable.js';
import { claimReplies } from '../../store/claimReplies.js';
import type { Db } from '../../store/db.js';
import { foldThread, type FoldedRow, type FoldStep } from '../../store/foldThread.js';
import { nextReplyDue } from '../../store/nextReplyDue.js';
import { threadsToFollow } from '../../store/threadsToFollow.js';
import { typingThreads } from '../../store/typingThreads.js';
import type { Wakeups } from '../../store/wakeups.js';
import type { PlatformClient } from '../platforms/types.js';
import type { OutboxRow } from './content.js';
import { fold } from './fold.js';
import { deliverReply } from './sender.js';

export interface DeliveryDeps {
  db: Db;
  wakeups: Wakeups;
  clients: ReadonlyMap<string, PlatformClient>;
  log: Logger;
  /** Longest sleep: the sweep that covers lost wake-ups (runtime.poll_ms). */
  pollMs: number;
  newId: () => string;
  /**
   * A sender's lease on an outbox row (runtime.lease_ttl_ms): past it, a row whose sender
   * died is taken over. A delivery's deadline (`timeout_ms`) is at most two thirds of it,
   * so a live sender's calls always end (answered or aborted) before its lease does.
   */
  leaseMs: number;
  /** Readies the platform adapters before the first send (the SDK's initialisation). */
  initialize: () => Promise<void>;
}

/** How often "typing…" is renewed: each platform's indicator fades after a few seconds. */
const typingEveryMs: Record<PlatformName, number | null> = {
  slack: 20_000,
  discord: 8_000,
  telegram: 4_500,
  teams: 3_000,
  gchat: null,
};

/** Rows one claim takes, sent concurrently (each to its own thread). */
const claimSize = 16;
/** Every this many rounds, the sweep looks at every bound session, not only recent ones. */
const fullSweepEvery = 60;

/** The store's fold step around the pure `fold`, making new rows' ids with `newId`. */
export function foldStepWith(newId: () => string): FoldStep {
  return (thread, events, rows) => {
    const byId = new Map<string, OutboxRow>();
    const byRequest = new Map<string, OutboxRow>();
    for (const row of rows as OutboxRow[]) {
      byId.set(row.reply_id, row);
      if (row.request_id) byRequest.set(row.request_id, row);
    }
    const result = fold(
      { openReplyId: thread.open_reply_id, typing: thread.typing },
      events,
      { byId, byRequest },
      newId,
    );
    return {
      openReplyId: result.state.openReplyId,
      typing: result.state.typing,
      touched: [...result.touched] as FoldedRow[],
    };
  };
}

/**
 * The platform delivery loop (a worker-role process runs one). Each round: fold the
 * journal of sessions that woke up (or that the sweep finds behind) into their outbox,
 * send what is due, renew "typing…" where a worker holds the session; then sleep until a
 * wake-up, the next due retry or edit, or the poll interval. Everything it knows is in
 * the database, so a crash loses nothing: the next process folds from each thread's
 * `followed_sequence` and sends every row not yet confirmed. `stop()` ends the sleep at
 * once and waits for the round in progress.
 */
export function startDelivery(deps: DeliveryDeps): { stop: () => Promise<void> } {
  const foldStep = foldStepWith(deps.newId);
  const adapters = [...deps.clients.keys()];
  const stopped = new AbortController();
  const dirty = new Set<string>();
  const lastTyped = new Map<string, number>();
  let wake = new AbortController();
  const unsubscribe = deps.wakeups.subscribe((wakeup) => {
    if (wakeup.kind === 'typing') return;
    dirty.add(wakeup.sessionId);
    wake.abort();
  });

  /** Whether this round folded anything (a turn may have started: typing is due at once). */
  let folded = false;
  const foldSessions = async (sessions: Iterable<string>) => {
    for (const sessionId of sessions) {
      for (;;) {
        const result = await foldThread(deps.db, sessionId, foldStep);
        if (result.folded > 0) folded = true;
        if (!result.more) break;
      }
    }
  };

  const send = async () => {
    for (;;) {
      const token = newLeaseToken();
      const rows = await claimReplies(deps.db, {
        adapters,
        token,
        leaseMs: deps.leaseMs,
        limit: claimSize,
      });
      if (rows.length === 0) return;
      const sender = { db: deps.db, clients: deps.clients, log: deps.log };
      await Promise.all(rows.map((row) => deliverReply(sender, row, token)));
      if (rows.length < claimSize) return;
    }
  };

  /**
   * Typing calls in flight, by thread. The loop never waits for one: each runs on its own
   * under the adapter's `typing_timeout_ms` (and is aborted by `stop()`), so a platform
   * that does not answer its typing call holds up nothing else, and a thread gets no
   * second call while its last one is still out.
   */
  const typingCalls = new Map<string, Promise<void>>();
  let lastTyping = 0;
  const type = async () => {
    const now = Date.now();
    // Renewals at most once a second; a round that folded new events looks at once.
    if (!folded && now - lastTyping < 1000) return;
    lastTyping = now;
    for (const { adapter, thread_id: threadId } of await typingThreads(deps.db, adapters)) {
      const client = deps.clients.get(adapter);
      const every = client ? typingEveryMs[client.name] : null;
      const key = `${adapter}\u0000${threadId}`;
      if (!client || every === null || now - (lastTyped.get(key) ?? 0) < every) continue;
      if (typingCalls.has(key)) continue;
      lastTyped.set(key, now);
      const call = withDeadline(
        client.config.typingTimeoutMs,
        (signal) => client.typing(threadId, signal),
        stopped.signal,
      )
        // Typing is a courtesy: a refusal (Slack outside assistant threads) or a platform
        // too slow to show it is not an error.
        .catch(() => {})
        .finally(() => typingCalls.delete(key));
      typingCalls.set(key, call);
    }
    for (const [key, at] of lastTyped) if (now - at > 60_000) lastTyped.delete(key);
  };

  let sweeps = 0;
  let lastSweep = 0;
  const loop = (async () => {
    while (!stopped.signal.aborted) {
      wake = new AbortController();
      folded = false;
      let sleepMs = deps.pollMs;
      try {
        const woken = [...dirty];
        dirty.clear();
        if (woken.length > 0) {
          await foldSessions(
            await threadsToFollow(deps.db, {
              adapters,
              sessionIds: woken,
              recentMs: null,
              limit: woken.length,
            }),
          );
        }
        // The sweep (for lost wake-ups) runs once per poll interval, however many wake-ups.
        if (Date.now() - lastSweep >= deps.pollMs) {
          lastSweep = Date.now();
          sweeps += 1;
          const behind = await threadsToFollow(deps.db, {
            adapters,
            recentMs: sweeps % fullSweepEvery === 1 ? null : deps.pollMs * 30,
            limit: 200,
          });
          await foldSessions(behind);
        }
        await deps.initialize();
        await send();
        await type();
        const due = await nextReplyDue(deps.db, adapters);
        if (due !== null) sleepMs = Math.max(20, Math.min(sleepMs, due));
      } catch (error) {
        deps.log.error({ err: (error as Error).message }, 'platform delivery round failed');
      }
      if (dirty.size > 0) continue;
      await abortableDelay(sleepMs, AbortSignal.any([wake.signal, stopped.signal]));
    }
  })();

  return {
    stop: async () => {
      stopped.abort();
      unsubscribe();
      await loop;
      await Promise.all(typingCalls.values());
    },
  };
}
