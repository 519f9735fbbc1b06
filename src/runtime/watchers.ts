import type { QueuedTurn } from '../store/collectTurns.js';
import type { Lease } from '../store/types.js';
import type { RuntimeDeps } from './deps.js';

export interface Watch {
  signal: AbortSignal;
  stop: () => void;
}

/**
 * Aborts the current model step when an input newer than the burst is admitted to this
 * session ("pivot", RUNTIME.md). Only the wake-up is watched: a lost one means the new
 * input is answered in the next burst instead, which is slower but still correct.
 */
export function watchForNewInput(
  deps: RuntimeDeps,
  lease: Lease,
  turns: QueuedTurn[],
  enabled: boolean,
): Watch {
  const controller = new AbortController();
  if (!enabled) return { signal: controller.signal, stop: () => {} };
  const newest = (turns[turns.length - 1] as QueuedTurn).admitted_sequence;
  const unsubscribe = deps.wakeups.subscribe((wakeup) => {
    if (
      wakeup.kind === 'input' &&
      wakeup.sessionId === lease.sessionId &&
      wakeup.sequence > newest
    ) {
      controller.abort(new Error('pivot'));
    }
  });
  return { signal: controller.signal, stop: unsubscribe };
}

/**
 * Aborts when a cancel of this session's running burst is requested: at once on the
 * wake-up, or at the next heartbeat if the wake-up was lost (`trigger`).
 */
export function watchForCancel(deps: RuntimeDeps, lease: Lease): Watch & { trigger: () => void } {
  const controller = new AbortController();
  const trigger = () => controller.abort(new Error('cancel requested'));
  const unsubscribe = deps.wakeups.subscribe((wakeup) => {
    if (wakeup.kind === 'cancel' && wakeup.sessionId === lease.sessionId) trigger();
  });
  return { signal: controller.signal, stop: unsubscribe, trigger };
}
