import type { Logger } from '../log.js';
import { abortableDelay } from '../time/abortable.js';

/** What a round asks of the loop before the next one. */
export interface RoundOutcome {
  /** Run the next round at once (the round found work; there may be more). */
  again?: boolean;
  /** Milliseconds until the earliest item falls due (null or absent: none known). */
  dueMs?: number | null;
  /** Ends the sleep early when it settles (a handler ended: a slot is free). */
  orWhen?: Promise<unknown>;
}

export interface TimedLoop {
  /** Ends the current sleep (or makes the next one end at once): work may be waiting. */
  wake(): void;
  /** No more rounds; resolves when the round in progress has ended. */
  stop(): Promise<void>;
}

/**
 * The engine's one loop: rounds, and sleeps between them. A round does a kind's work and
 * says when the next is due; the loop then sleeps until that time, a `wake()`, or the
 * poll interval, whichever comes first. The poll interval is the safety net of every
 * kind: it covers lost wake-ups, the expired leases of dead workers and the rows a sweep
 * finds. A wake-up during a round is not lost (the wake is re-armed before each round, so
 * the sleep after it ends at once). A round that fails is logged and retried after the
 * poll interval. States: `round`, `sleeping`, `stopped`.
 */
export function startTimedLoop(options: {
  /** Names the loop in logs. */
  name: string;
  log: Logger;
  pollMs: number;
  /** The shortest sleep before a due item: keeps a busy loop from spinning. */
  minSleepMs: number;
  round: () => Promise<RoundOutcome>;
}): TimedLoop {
  const stopped = new AbortController();
  let wake = new AbortController();
  const loop = (async () => {
    while (!stopped.signal.aborted) {
      wake = new AbortController();
      let sleepMs = options.pollMs;
      let orWhen: Promise<unknown> | undefined;
      try {
        const outcome = await options.round();
        if (outcome.again) continue;
        if (outcome.dueMs !== undefined && outcome.dueMs !== null) {
          sleepMs = Math.max(options.minSleepMs, Math.min(sleepMs, outcome.dueMs));
        }
        orWhen = outcome.orWhen;
      } catch (error) {
        options.log.error(
          { loop: options.name, err: (error as Error).message },
          'round failed; retrying after the poll interval',
        );
      }
      const sleep = new AbortController();
      // A settled `orWhen` ends the sleep; its own outcome is the round's business.
      orWhen?.then(
        () => sleep.abort(),
        () => sleep.abort(),
      );
      await abortableDelay(sleepMs, AbortSignal.any([wake.signal, stopped.signal, sleep.signal]));
      sleep.abort();
    }
  })();
  return {
    // abort() builds its reason before it checks whether the signal is already aborted:
    // every input wake-up would pay for a DOMException.
    wake: () => {
      if (!wake.signal.aborted) wake.abort();
    },
    stop: async () => {
      stopped.abort();
      await loop;
    },
  };
}
