import type { Socket } from 'node:net';

/**
 * Calls `gone` once the client has left: when the connection of the request (or reply)
 * closes, or on the next tick if it closed already. It watches the connection, not the
 * request: a request whose body was read emits `close` then, long before its client
 * leaves, and a listener added after a `close` never hears of it — a stream opened for a
 * client that left while the route was still looking things up would live on, its slot
 * taken. Returns what stops watching; call it when the work ends (a keep-alive connection
 * outlives its requests).
 */
export function whenClientGone(
  on: { raw: { socket: Socket | null } },
  gone: () => void,
): () => void {
  const socket = on.raw.socket;
  if (socket === null || socket.destroyed) {
    queueMicrotask(gone);
    return () => {};
  }
  socket.once('close', gone);
  return () => socket.off('close', gone);
}
