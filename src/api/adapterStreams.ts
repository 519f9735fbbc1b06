import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Principal } from '../config/types.js';
import type { Db } from '../store/db.js';
import { cancelTurn, type CancelAnswer } from '../store/cancelTurn.js';
import { openEventStream } from './sseResponse.js';
import { SseWriter } from './sseWriter.js';
import { whenClientGone } from './clientGone.js';

/**
 * The event streams a protocol adapter answers with (docs/protocols.md): each opened on its
 * reply and written through an `SseWriter` (kept alive by comments, a client that leaves
 * more than the bound unread dropped), its signal aborted when the client leaves, is
 * dropped, or the app closes (`closeAll`), and ended when its body returns.
 */
export class AdapterStreams {
  private readonly open = new Set<AbortController>();

  constructor(private readonly options: { keepaliveMs: number; bufferBytes: number }) {}

  async serve(
    request: FastifyRequest,
    reply: FastifyReply,
    body: (stream: SseWriter, signal: AbortSignal) => Promise<void>,
  ): Promise<void> {
    const controller = new AbortController();
    this.open.add(controller);
    const response = openEventStream(reply);
    const unwatch = whenClientGone(request, () => controller.abort());
    const stream = new SseWriter(response, { ...this.options, onDrop: () => controller.abort() });
    const stopKeepAlive = stream.keepAlive();
    try {
      await body(stream, controller.signal);
    } finally {
      unwatch();
      stopKeepAlive();
      this.open.delete(controller);
      if (!response.writableEnded) response.end();
    }
  }

  /** Every request this adapter is still answering stops (blocking waits too). */
  track(controller: AbortController): () => void {
    this.open.add(controller);
    return () => this.open.delete(controller);
  }

  closeAll(): void {
    for (const controller of this.open) controller.abort();
  }
}

/**
 * How long a cancel waits for its turn to end before answering it as it stands: 5 s, or
 * less where `server.blocking_wait_ms` bounds every blocking wait lower.
 */
export function cancelWaitMs(blockingWaitMs: number): number {
  return Math.min(5_000, blockingWaitMs);
}

/**
 * A protocol adapter's cancel of one turn (OpenAI's cancel and delete, A2A's CancelTask,
 * MCP's `notifications/cancelled`): Parley's durable cancel, as the principal, with a
 * command id of the turn's own, so every repeat of it — through any adapter — is the same
 * command (`duplicate`), never a second one.
 */
export function cancelAsPrincipal(
  db: Db,
  principal: Pick<Principal, 'tenant' | 'user'>,
  turn: { sessionId: string; turnId: string },
): Promise<CancelAnswer> {
  return cancelTurn(db, {
    tenant: principal.tenant,
    sessionId: turn.sessionId,
    turnId: turn.turnId,
    commandId: `cancel_${turn.turnId}`.slice(0, 128),
    actor: { user: principal.user, tenant: principal.tenant },
  });
}
