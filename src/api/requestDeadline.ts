import type { FastifyInstance } from 'fastify';
import { clientErrorHandler } from './errors.js';

/**
 * `server.request_timeout_ms` for a request body, held by Parley itself.
 *
 * Node enforces `requestTimeout` from its list of connections in progress
 * (node_http_parser.cc, ConnectionsList: a std::set of parsers ordered by when their
 * current message began, swept every `connectionsCheckingInterval`). A connection that is
 * not in that set — a parser whose entry was lost, or a request on a socket Node has
 * stopped reading — is never timed out: a client that sends the headers and part of the
 * body holds its socket until it gives up. So every request that has a body gets its own
 * timer when its headers are in: if the body is still incomplete `timeoutMs` later, the
 * request is answered `408 request_timeout` (unless a response has begun) and the socket
 * is closed — the same answer Node's own sweep gives, whichever comes first. The timer is
 * cleared when the body is complete or the socket closes.
 */
export function holdRequestDeadline(app: FastifyInstance, timeoutMs: number): void {
  if (timeoutMs <= 0) return;
  app.addHook('onRequest', (request, _reply, done) => {
    const incoming = request.raw;
    if (incoming.complete || !hasBody(incoming.headers)) return done();
    const socket = incoming.socket;
    const timer = setTimeout(() => {
      stop();
      if (incoming.complete || socket.destroyed) return;
      const error = new Error('the request did not arrive in time') as NodeJS.ErrnoException;
      error.code = 'ERR_HTTP_REQUEST_TIMEOUT';
      clientErrorHandler(error, socket);
    }, timeoutMs);
    const stop = () => {
      clearTimeout(timer);
      incoming.off('end', stop);
      socket.off('close', stop);
    };
    incoming.once('end', stop);
    socket.once('close', stop);
    done();
  });
}

/** A body follows the headers: a non-zero Content-Length, or a Transfer-Encoding. */
function hasBody(headers: Record<string, string | string[] | undefined>): boolean {
  const length = headers['content-length'];
  if (typeof length === 'string' && length.trim() !== '0') return true;
  return headers['transfer-encoding'] !== undefined;
}
