/**
 * The catalog's periodic refresh (`catalog.refresh_hours`). States: `waiting` (an
 * abortable sleep), `syncing` (one call of `sync`), `stopped`. It takes its I/O as
 * functions, so it holds no SQL and no HTTP; a failing sync is reported and retried at
 * the next interval, never thrown. `stop()` ends a sleep at once and waits for a running
 * sync to finish.
 */
export interface RefreshOptions {
  sync: () => Promise<unknown>;
  intervalMs: number;
  onError: (error: unknown) => void;
  /** Sleeps `ms`, ending early (resolved) when `signal` aborts. Injected for tests. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

export function startCatalogRefresh(options: RefreshOptions): { stop: () => Promise<void> } {
  const stopped = new AbortController();
  const sleep = options.sleep ?? abortableSleep;
  const loop = (async () => {
    for (;;) {
      await sleep(options.intervalMs, stopped.signal);
      if (stopped.signal.aborted) return;
      try {
        await options.sync();
      } catch (error) {
        options.onError(error);
      }
    }
  })();
  return {
    stop: async () => {
      stopped.abort();
      await loop;
    },
  };
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    // Timers cap at 2^31-1 ms (~24.8 days); a longer interval simply refreshes sooner.
    const timer = setTimeout(done, Math.min(ms, 2 ** 31 - 1));
    timer.unref();
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
