// Backoff: how long to wait before the next attempt of anything Parley retries.

/** The longest a provider's `retry-after` may hold a turn (and its lease) before a retry. */
export const maxRetryAfterMs = 60_000;

/**
 * The delay before retrying a transient failure: the backoff, or the provider's
 * `retry-after` when that is longer, capped at `maxRetryAfterMs` (a provider asking for
 * ten minutes gets the retries spent sooner, and the turn fails `provider_unavailable`).
 */
export function retryDelayMs(
  failure: { readonly retryAfterMs: number | null },
  baseMs: number,
  failedAttempts: number,
  random = Math.random,
): number {
  const backoff = backoffMs(baseMs, failedAttempts, random);
  return Math.min(Math.max(backoff, failure.retryAfterMs ?? 0), Math.max(backoff, maxRetryAfterMs));
}

/**
 * The one backoff of everything Parley retries (model calls, evaluations, platform posts,
 * webhook deliveries): exponential, base·2^(n-1) after n failed attempts, capped at
 * `capMs`, randomised in [half, full] (jitter spreads retries of many failures apart).
 */
export function backoffMs(
  baseMs: number,
  failedAttempts: number,
  random = Math.random,
  capMs = Number.POSITIVE_INFINITY,
): number {
  const ceiling = Math.min(baseMs * 2 ** (failedAttempts - 1), capMs);
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}
