/** Sleeps for `ms`, or until `signal` aborts (then resolves early, never rejects). */
export function abortableDelay(ms: number, signal: AbortSignal): Promise<void> {
  return cancellableDelay(ms, signal).done;
}

/**
 * The same, plus `cancel()` to end the sleep early and detach from `signal` at once: for a
 * delay raced against other promises, so listeners do not pile up on a long-lived signal.
 */
export function cancellableDelay(
  ms: number,
  signal: AbortSignal,
): { done: Promise<void>; cancel: () => void } {
  let cancel = () => {};
  const done = new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(finish, ms);
    function finish() {
      clearTimeout(timer);
      signal.removeEventListener('abort', finish);
      resolve();
    }
    signal.addEventListener('abort', finish, { once: true });
    cancel = finish;
  });
  return { done, cancel };
}
