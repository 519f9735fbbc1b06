import type { FastifyError, FastifyInstance } from 'fastify';
import { ParleyError } from '../errors.js';

/**
 * Every error leaves as `{"error": code, "message": ...}` from the one registry. Fastify's
 * own errors (body too large, bad JSON, wrong media type) are mapped to Parley codes;
 * anything unexpected is a generic 500 whose details go only to the log.
 */
export function installErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError | ParleyError, request, reply) => {
    const parley = error instanceof ParleyError ? error : fromFastify(error);
    if (parley.status >= 500) {
      request.log.error(
        { err: { message: error.message, code: (error as FastifyError).code } },
        'request failed',
      );
    }
    void reply.status(parley.status).send(parley.toBody());
  });
  app.setNotFoundHandler((_request, reply) => {
    const error = new ParleyError('not_found', 'no such endpoint');
    void reply.status(error.status).send(error.toBody());
  });
}

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
      if (error.statusCode && error.statusCode < 500) {
        return new ParleyError('invalid_request', 'the request is not valid');
      }
      return new ParleyError('internal_error', 'something went wrong on the server');
  }
}
