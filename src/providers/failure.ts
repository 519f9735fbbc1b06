import { APICallError } from '@ai-sdk/provider';

/**
 * Provider failures, classified once, here. The codes are the `error` event codes the
 * runtime journals (PROTOCOL.md: never the provider's text):
 * - `provider_auth`: 401/403 — the key is wrong or lacks access. Permanent.
 * - `context_length`: the provider refused the prompt as too long. Permanent, but worth
 *   one retry with a tighter history (prompt.ts `tighter`).
 * - `provider_rejected`: any other 4xx (400, 404, 409, 422...). Permanent.
 * - `provider_unavailable`: 408, 429, 5xx, a network failure or a stream cut mid-way.
 *   Transient: retried with backoff, honouring `retryAfterMs`; the runtime uses this code
 *   once its retries are exhausted.
 * - `provider_timeout`: the stream sent nothing within the provider's first-token timeout,
 *   or went silent past its idle timeout (providers/deadlines.ts). Transient: retried like
 *   `provider_unavailable`; the turn's error when the last retry timed out too.
 * - `provider_circuit_open`: the provider kept failing and its circuit (circuit.ts) refused
 *   the call without sending it. Transient: the runtime fails over to the agent's
 *   fallback model, or retries; never a turn's error code (`provider_unavailable` is).
 */
export type ProviderFailureCode =
  | 'provider_auth'
  | 'provider_rejected'
  | 'context_length'
  | 'provider_unavailable'
  | 'provider_timeout'
  | 'provider_circuit_open';

const messages: Record<ProviderFailureCode, string> = {
  provider_auth: 'the model provider refused the credentials',
  provider_rejected: 'the model provider refused the request',
  context_length: 'the conversation is too long for the model',
  provider_unavailable: 'the model provider is unavailable',
  provider_timeout: 'the model provider stopped answering',
  provider_circuit_open: 'the model provider kept failing; its circuit is open',
};

export class ProviderFailure extends Error {
  readonly code: ProviderFailureCode;
  /** From `retry-after` / `retry-after-ms`: the delay the provider asked for, if any. */
  readonly retryAfterMs: number | null;

  constructor(
    readonly isRetryable: boolean,
    readonly statusCode: number | null,
    details: { code?: ProviderFailureCode; retryAfterMs?: number | null } = {},
  ) {
    const code = details.code ?? (isRetryable ? 'provider_unavailable' : 'provider_rejected');
    // The message is ours alone: a provider's body can echo the prompt or an account id.
    super(messages[code]);
    this.name = 'ProviderFailure';
    this.code = code;
    this.retryAfterMs = details.retryAfterMs ?? null;
  }
}

/**
 * The refusals each provider sends for a prompt over the context window: OpenAI and vLLM
 * (`context_length_exceeded`, "maximum context length"), Anthropic ("prompt is too
 * long"), Gemini ("input token count ... exceeds the maximum"), llama.cpp
 * (`exceed_context_size_error`), Ollama ("context length").
 */
const contextLengthPattern =
  /context_length_exceeded|maximum context length|prompt is too long|exceeds the maximum number of tokens|exceed_context_size|context size|context length|context window|too many tokens/i;

/** Error codes that providers put in a stream's error event for transient conditions. */
const transientStreamPattern =
  /overloaded|rate_limit|server_error|api_error|unavailable|timeout|internal|resource_exhausted/i;

export function classifyProviderError(
  error: unknown,
  now: () => number = Date.now,
): ProviderFailure {
  if (error instanceof ProviderFailure) return error;
  if (APICallError.isInstance(error)) {
    const status = error.statusCode ?? null;
    const retryAfterMs = parseRetryAfter(error.responseHeaders, now);
    // No status, a 2xx whose body then broke, or a connection that failed under the SDK:
    // the provider never refused anything, the transport did.
    if (status === null || status < 400 || isNetworkFailure(error.cause)) {
      return new ProviderFailure(true, status !== null && status >= 400 ? status : null, {
        retryAfterMs,
      });
    }
    if (status === 401 || status === 403) {
      return new ProviderFailure(false, status, { code: 'provider_auth' });
    }
    if (status === 408 || status === 429 || status >= 500) {
      return new ProviderFailure(true, status, { retryAfterMs });
    }
    if (contextLengthPattern.test(error.responseBody ?? '')) {
      return new ProviderFailure(false, status, { code: 'context_length' });
    }
    return new ProviderFailure(false, status, { code: 'provider_rejected' });
  }
  if (isNetworkFailure(error)) return new ProviderFailure(true, null);
  // An error event inside a stream (Anthropic `overloaded_error`, OpenAI `response.failed`):
  // the SDK hands over the provider's error object.
  const described = describeStreamError(error);
  if (described !== null) {
    if (contextLengthPattern.test(described)) {
      return new ProviderFailure(false, null, { code: 'context_length' });
    }
    if (transientStreamPattern.test(described)) return new ProviderFailure(true, null);
    return new ProviderFailure(false, null, { code: 'provider_rejected' });
  }
  return new ProviderFailure(false, null, { code: 'provider_rejected' });
}

/** A refused connection, a reset, or a response body cut mid-way (undici: "terminated"). */
function isNetworkFailure(error: unknown): boolean {
  const codes = [error, (error as { cause?: unknown } | null)?.cause].map(
    (candidate) => (candidate as { code?: unknown } | null)?.code,
  );
  if (
    codes.some(
      (code) =>
        typeof code === 'string' &&
        /^(ECONN|ETIMEDOUT|EAI_AGAIN|ENOTFOUND|EPIPE|UND_ERR)/.test(code),
    )
  ) {
    return true;
  }
  return error instanceof TypeError && /terminated|fetch failed|network/i.test(error.message);
}

function describeStreamError(error: unknown): string | null {
  if (error === null || typeof error !== 'object' || error instanceof Error) return null;
  const record = error as Record<string, unknown>;
  const parts = [record.type, record.code, record.status, record.message];
  const nested = record.error as Record<string, unknown> | undefined;
  if (nested && typeof nested === 'object') parts.push(nested.type, nested.code, nested.message);
  const text = parts.filter((part) => typeof part === 'string').join(' ');
  return text.length > 0 ? text : null;
}

/**
 * `retry-after-ms` (OpenAI), else `retry-after` in seconds or as an HTTP date. Null when
 * absent or unparsable; never negative.
 */
export function parseRetryAfter(
  headers: Record<string, string> | undefined,
  now: () => number = Date.now,
): number | null {
  if (!headers) return null;
  const lower = Object.fromEntries(
    Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]),
  );
  const milliseconds = Number(lower['retry-after-ms']);
  if (lower['retry-after-ms'] !== undefined && Number.isFinite(milliseconds) && milliseconds >= 0) {
    return Math.round(milliseconds);
  }
  const value = lower['retry-after']?.trim();
  if (!value) return null;
  if (/^\d+(\.\d+)?$/.test(value)) return Math.round(Number(value) * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - now());
}
