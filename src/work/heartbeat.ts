/**
 * Renews a lease every `everyMs` (ttl/3 by default) while a handler runs. The lease is
 * lost when `renew` answers that the token is gone, or when no renewal succeeded for a
 * whole ttl (someone else may hold the item by now): `onLost` then aborts the handler,
 * which must stop writing. A failed renewal inside the ttl is retried at the next beat.
 */
export function startLeaseHeartbeat(options: {
  everyMs: number;
  ttlMs: number;
  /** One renewal: true while the lease is still ours. */
  renew: () => Promise<boolean>;
  onLost: () => void;
  onError?: (error: unknown) => void;
}): { stop: () => void } {
  let lastRenewed = Date.now();
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    options
      .renew()
      .then(
        (held) => {
          if (held) {
            lastRenewed = Date.now();
            return;
          }
          clearInterval(timer);
          options.onLost();
        },
        (error: unknown) => {
          if (Date.now() - lastRenewed >= options.ttlMs) {
            clearInterval(timer);
            options.onLost();
          } else {
            options.onError?.(error);
          }
        },
      )
      .finally(() => {
        running = false;
      });
  }, options.everyMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
