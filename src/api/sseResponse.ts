import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';

/**
 * The SSE `retry:` hint sent first on every stream: how long an EventSource waits before
 * it reconnects. One second, as `Retry-After: 1` on a `503 storage_unavailable`: a stream
 * drops when its process restarts or fails over, and the journal is back about that soon.
 */
export const reconnectHintMs = 1000;

/**
 * Takes the reply over as a server-sent event stream (Parley's own, or an adapter's):
 * its headers (no caching or buffering by proxies), sent at once, then the `retry:` hint.
 */
export function openEventStream(
  reply: FastifyReply,
  headers: Record<string, string> = {},
): ServerResponse {
  reply.hijack();
  const response = reply.raw;
  response.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store, no-transform',
    'x-content-type-options': 'nosniff',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    ...headers,
  });
  response.flushHeaders();
  response.write(`retry: ${reconnectHintMs}\n\n`);
  return response;
}
