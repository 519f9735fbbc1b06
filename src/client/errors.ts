/**
 * Every failure the SDK reports is a ParleyClientError, matched on `code`: the server's
 * error code (PROTOCOL.md), or one of the SDK's own for failures without an answer.
 */
export const clientErrorCodes = {
  /** No HTTP answer: connection refused or reset, DNS, offline. */
  network_error: 'network_error',
  /** The call's own time limit passed. */
  timeout: 'timeout',
  /** The caller aborted (its AbortSignal, or close()). */
  aborted: 'aborted',
  /** An answer that is not the protocol's (no JSON, no error code). */
  bad_response: 'bad_response',
} as const;

export class ParleyClientError extends Error {
  /**
   * @param code the server's `error` field, or a clientErrorCodes value
   * @param status the HTTP status, 0 when there was no answer
   * @param body the parsed error body (never the request body)
   */
  constructor(
    readonly code: string,
    message: string,
    readonly status = 0,
    readonly body: Record<string, unknown> | null = null,
  ) {
    super(message);
    this.name = 'ParleyClientError';
  }

  /** Worth another try for an idempotent call: no answer, or the server failed. */
  get retryable(): boolean {
    return this.code === 'network_error' || this.code === 'timeout' || this.status >= 500;
  }
}

export function isParleyClientError(error: unknown): error is ParleyClientError {
  return error instanceof ParleyClientError;
}
