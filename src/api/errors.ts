import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ParleyError } from '../errors.js';
import { isStorageUnavailable } from '../store/postgresHosts.js';

/** Seconds a client is asked to wait before retrying while the database is unavailable. */
const storageRetryAfterSeconds = 1;

/**
 * Every error leaves as `{"error": code, "message": ...}` from the one registry, whoever
 * raised it: a route, Fastify's router (a bad URL, an over-long parameter), its body
 * parser, or Node's HTTP parser before Fastify saw the request (a slow or oversized
 * request). Nothing of the request is echoed back. A database that cannot be reached or
 * written for now is a 503 `storage_unavailable` with `Retry-After`; anything else
 * unexpected is a generic 500 whose details go only to the log.
 */
export function installErrorHandler(
  app: FastifyInstance,
  /** The body an error is sent as (an adapter's protocol has its own error shape). */
  bodyOf: (error: ParleyError) => Record<string, unknown> = (error) => error.toBody(),
): void {
  app.setErrorHandler((error: FastifyError | ParleyError, request, reply) => {
    const unavailable = !(error instanceof ParleyError) && isStorageUnavailable(error);
    const parley =
      error instanceof ParleyError
        ? error
        : unavailable
          ? new ParleyError('storage_unavailable', 'the database is unavailable; retry shortly')
          : fromFastify(error);
    // A database restart or failover. A commit whose answer was lost may have happened:
    // the request is to be sent again unchanged (writes are idempotent by their client
    // keys, turn_id and command_id), which applies it once either way.
    if (unavailable) void reply.header('retry-after', String(storageRetryAfterSeconds));
    if (parley.status >= 500) {
      request.log.error(
        { err: { message: error.message, code: (error as FastifyError).code } },
        'request failed',
      );
    }
    void reply.status(parley.status).send(bodyOf(parley));
  });
}

/** A path no route has: the coded 404. */
export function installNotFound(app: FastifyInstance): void {
  app.setNotFoundHandler((_request, reply) => {
    const error = new ParleyError('not_found', 'no such endpoint');
    void reply.status(error.status).send(error.toBody());
  });
}

/** Fastify's `frameworkErrors`: errors of the router, before any route runs. */
export function frameworkErrors(
  error: FastifyError,
  _request: FastifyRequest,
  reply: FastifyReply,
): void {
  const parley =
    error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? new ParleyError('uri_too_long', 'a path segment of the URL is too long')
      : error.code === 'FST_ERR_BAD_URL'
        ? new ParleyError('invalid_url', 'the URL is not validly encoded')
        : new ParleyError('invalid_request', 'the request is not valid');
  void reply.status(parley.status).send(parley.toBody());
}

/**
 * Node's `clientError`: the request never became one (headers or body too slow, headers
 * too large, unparsable HTTP). Answered on the socket, unless a response has already begun
 * there (its bytes must not be corrupted), and the socket is then closed.
 */
export function clientErrorHandler(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const parley =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? new ParleyError('request_timeout', 'the request did not arrive in time')
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? new ParleyError('headers_too_large', 'the request headers are too large')
        : new ParleyError('invalid_request', 'the request is not valid HTTP');
  const body = JSON.stringify(parley.toBody());
  const response = (socket as Socket & { _httpMessage?: { headersSent?: boolean } | null })
    ._httpMessage;
  if (socket.writable && !response?.headersSent) {
    socket.write(
      `HTTP/1.1 ${parley.status} ${statusText[parley.status] ?? 'Error'}\r\n` +
        `content-type: application/json; charset=utf-8\r\n` +
        `content-length: ${Buffer.byteLength(body)}\r\n` +
        `x-content-type-options: nosniff\r\ncache-control: no-store\r\nconnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

const statusText: Record<number, string> = {
  400: 'Bad Request',
  408: 'Request Timeout',
  431: 'Request Header Fields Too Large',
};

function fromFastify(error: FastifyError): ParleyError {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ParleyError(
        'payload_too_large',
        'the request body is larger than the server accepts',
      );
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ParleyError('unsupported_media_type', 'send the body as application/json');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ParleyError('malformed_json', 'the request body is not valid JSON');
    default:
      if (error.statusCode === 400 && error instanceof SyntaxError) {
        return new ParleyError('malformed_json', 'the request body is not valid JSON');
      }
      if (error.statusCode === 408) {
        return new ParleyError('request_timeout', 'the request did not arrive in time');
      }
      if (error.statusCode && error.statusCode < 500) {
        return new ParleyError('invalid_request', 'the request is not valid');
      }
      return new ParleyError('internal_error', 'something went wrong on the server');
  }
}
