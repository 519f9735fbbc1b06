import type { Logger } from '../../log.js';
import type { PlatformName } from '../../config/platformTypes.js';
import { withDeadline } from '../../time/abortable.js';
import { startOutboxLoop, type OutboxKind } from '../../work/outboxLoop.js';
import { claimReplies, type ClaimedReply } from '../../store/claimReplies.js';
import type { Db } from '../../store/db.js';
import { foldThread, type FoldedRow, type FoldStep } from '../../store/foldThread.js';
import { nextOutboxDue } from '../../store/nextOutboxDue.js';
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
 * Platform replies as a kind of the engine's outbox work (src/work/outboxLoop.ts; a
 * worker-role process runs one). Following folds a session's journal into its threads'
 * outbox; sending delivers a claimed row (post, edit, stream) under the row's lease;
 * after sending, "typing…" is renewed where a worker holds the session.
 */
export function startDelivery(deps: DeliveryDeps): { stop: () => Promise<void> } {
  const foldStep = foldStepWith(deps.newId);
  const adapters = [...deps.clients.keys()];
  const lastTyped = new Map<string, number>();
  const sender = { db: deps.db, clients: deps.clients, log: deps.log };

  /**
   * Typing calls in flight, by thread. The loop never waits for one: each runs on its own
   * under the adapter's `typing_timeout_ms` (and is aborted by `stop()`), so a platform
   * that does not answer its typing call holds up nothing else, and a thread gets no
   * second call while its last one is still out.
   */
  const typingCalls = new Map<string, Promise<void>>();
  let lastTyping = 0;
  const type = async (folded: boolean, stop: AbortSignal) => {
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
        stop,
      )
        // Typing is a courtesy: a refusal (Slack outside assistant threads) or a platform
        // too slow to show it is not an error.
        .catch(() => {})
        .finally(() => typingCalls.delete(key));
      typingCalls.set(key, call);
    }
    for (const [key, at] of lastTyped) if (now - at > 60_000) lastTyped.delete(key);
  };

  const kind: OutboxKind<string, ClaimedReply> = {
    name: 'platform replies',
    batchSize: claimSize,
    behind: (input) => threadsToFollow(deps.db, { adapters, ...input }),
    key: (sessionId) => sessionId,
    follow: async (sessionId) => {
      const result = await foldThread(deps.db, sessionId, foldStep);
      return { changed: result.folded > 0, more: result.more };
    },
    prepare: deps.initialize,
    claim: (token, limit) =>
      claimReplies(deps.db, { adapters, token, leaseMs: deps.leaseMs, limit }),
    send: (row, token) => deliverReply(sender, row, token),
    afterSend: type,
    nextDueMs: () => nextOutboxDue(deps.db, 'replies', adapters),
    stopped: async () => {
      await Promise.all(typingCalls.values());
    },
  };
  return startOutboxLoop(kind, { wakeups: deps.wakeups, log: deps.log, pollMs: deps.pollMs });
}
