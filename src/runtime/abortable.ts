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

/**
 * A graceful stop's second half: waits up to `graceMs` for `active` work to end; past it,
 * calls `onLate` (say so, then abort the work) and waits for the work to wind down.
 */
export async function drainWithin(
  active: Iterable<Promise<unknown>>,
  graceMs: number,
  signal: AbortSignal,
  onLate: () => void,
): Promise<void> {
  const drained = Promise.all(active).then(() => true);
  // Cancelled once drained: a pending grace timer would keep the process alive.
  const grace = cancellableDelay(graceMs, signal);
  const inTime = await Promise.race([drained, grace.done.then(() => false)]);
  grace.cancel();
  if (!inTime) {
    onLate();
    await Promise.all(active);
  }
}
