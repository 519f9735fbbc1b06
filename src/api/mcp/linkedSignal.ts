/**
 * A signal that aborts when any of `sources` does, held strongly by them (their abort
 * listeners), so it cannot be collected while a wait depends on it. `AbortSignal.any`'s
 * composite is held only weakly by its sources: one created inline for a single wait was
 * seen to miss its sources' abort after a garbage collection (Node 20).
 */
export function linkedSignal(...sources: AbortSignal[]): {
  signal: AbortSignal;
  dispose: () => void;
} {
  const controller = new AbortController();
  const abort = () => controller.abort();
  for (const source of sources) {
    if (source.aborted) controller.abort();
    else source.addEventListener('abort', abort, { once: true });
  }
  return {
    signal: controller.signal,
    dispose: () => {
      for (const source of sources) source.removeEventListener('abort', abort);
    },
  };
}
