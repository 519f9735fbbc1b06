/**
 * A signal that aborts when any of `sources` does, with that source's reason, held
 * strongly by them (their abort listeners), so it cannot be collected while a wait depends
 * on it; `dispose` unlinks it once the wait is over. `AbortSignal.any`'s composite is held
 * only weakly by its sources: one created inline for a single wait was seen to miss its
 * sources' abort after a garbage collection (Node 20); and each one costs a long-lived
 * source another weak reference until a collection (about 12 µs a call, three times this).
 */
export function linkedSignal(...sources: AbortSignal[]): {
  signal: AbortSignal;
  dispose: () => void;
} {
  const controller = new AbortController();
  const abort = (event: Event) => controller.abort((event.target as AbortSignal).reason);
  for (const source of sources) {
    if (source.aborted) {
      controller.abort(source.reason);
      break;
    }
    source.addEventListener('abort', abort, { once: true });
  }
  return {
    signal: controller.signal,
    dispose: () => {
      for (const source of sources) source.removeEventListener('abort', abort);
    },
  };
}
