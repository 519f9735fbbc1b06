import type { FastifyInstance } from 'fastify';
import type { ParleyError } from '../../errors.js';
import { installErrorHandler } from '../errors.js';

/** OpenAI's error `type` for an HTTP status. */
function typeOf(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 409) return 'conflict_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/** A Parley error in OpenAI's shape: `{"error": {"message", "type", "param", "code"}}`. */
export function openaiErrorBody(error: ParleyError): Record<string, unknown> {
  const field = error.details.field;
  return {
    error: {
      message: error.message,
      type: typeOf(error.status),
      param: typeof field === 'string' ? field : null,
      code: error.code,
    },
  };
}

/**
 * Errors on the OpenAI base URL answer in OpenAI's shape (the SDK reads `error.message`
 * and `error.code`), with Parley's codes and statuses, converted by the same handler as
 * Parley's own routes; everywhere else Parley's shape.
 */
export function installOpenaiErrors(scope: FastifyInstance): void {
  installErrorHandler(scope, openaiErrorBody);
}
