/** Exponential backoff with full jitter, and an abortable sleep. */
export interface BackoffOptions {
  /** First delay's upper bound (ms). */
  initialMs?: number;
  /** Upper bound of any delay (ms). */
  maxMs?: number;
  factor?: number;
}

export const defaultBackoff: Required<BackoffOptions> = {
  initialMs: 250,
  maxMs: 10_000,
  factor: 2,
};

/**
 * The delay before retry number `attempt` (1 = first retry): uniformly random in
 * [ceiling/2, ceiling], ceiling = initial * factor^(attempt-1) capped at max. Half jitter
 * keeps a floor, so a crowd of clients spreads out without retrying at once.
 */
export function backoffDelay(attempt: number, options: BackoffOptions = {}): number {
  const { initialMs, maxMs, factor } = { ...defaultBackoff, ...options };
  const ceiling = Math.min(maxMs, initialMs * factor ** Math.max(0, attempt - 1));
  return Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
}

/** Resolves after `ms`, or at once when `signal` aborts (then it resolves `false`). */
export function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
