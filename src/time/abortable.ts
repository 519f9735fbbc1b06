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

/** A call that did not finish within its deadline: its signal aborted what it was doing. */
export class DeadlineError extends Error {
  constructor(
    readonly ms: number,
    options?: ErrorOptions,
  ) {
    super(`no answer within ${ms} ms`, options);
    this.name = 'DeadlineError';
  }
}

/** A deadline several calls can share: each gets its signal, all end by the same time. */
export interface Deadline {
  readonly signal: AbortSignal;
  /** Runs `call` with the signal; a failure the deadline caused is a `DeadlineError`. */
  readonly run: <T>(call: (signal: AbortSignal) => Promise<T>) => Promise<T>;
}

/**
 * A deadline `ms` from now (ended early when `stop` aborts). Its signal is passed to what
 * a call starts (an HTTP request, a child process), so the work really ends at the
 * deadline instead of running on unwatched. A failure caused by the deadline is a
 * `DeadlineError`; a stop's abort is rethrown as it came.
 */
export function deadline(ms: number, stop?: AbortSignal): Deadline {
  const timeout = AbortSignal.timeout(ms);
  const signal = stop ? AbortSignal.any([timeout, stop]) : timeout;
  return {
    signal,
    run: async (call) => {
      try {
        return await call(signal);
      } catch (error) {
        if (timeout.aborted && !stop?.aborted) throw new DeadlineError(ms, { cause: error });
        throw error;
      }
    },
  };
}

/** One call under its own deadline of `ms` (see `deadline`). */
export function withDeadline<T>(
  ms: number,
  call: (signal: AbortSignal) => Promise<T>,
  stop?: AbortSignal,
): Promise<T> {
  return deadline(ms, stop).run(call);
}
