import type { ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { openEventStream } from './sseResponse.js';

/**
 * The event streams a protocol adapter answers with (docs/protocols.md): each opened on its
 * reply, kept alive by comments, its signal aborted when the client leaves or the app
 * closes (`closeAll`), and ended when its body returns.
 */
export class AdapterStreams {
  private readonly open = new Set<AbortController>();

  constructor(private readonly keepaliveMs: number) {}

  async serve(
    request: FastifyRequest,
    reply: FastifyReply,
    body: (response: ServerResponse, signal: AbortSignal) => Promise<void>,
  ): Promise<void> {
    const controller = new AbortController();
    this.open.add(controller);
    const response = openEventStream(reply);
    request.raw.on('close', () => controller.abort());
    const keepalive = setInterval(() => response.write(': keep-alive\n\n'), this.keepaliveMs);
    try {
      await body(response, controller.signal);
    } finally {
      clearInterval(keepalive);
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
