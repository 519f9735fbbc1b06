import type { WatchdogConfig } from '../config/types.js';
import { stallsTotal } from '../metrics.js';
import { newEvent, type NewEvent, type StallKind } from '../protocol/events.js';

/**
 * The progress watchdog (docs/governance.md, "Progress watchdog"). The lease proves that a
 * worker is alive; this proves that its turn moves. It sees three stalls:
 *
 * - `model_stream`: a model step whose stream keeps sending parts that are not output
 *   (keep-alives, empty deltas) and no text, reasoning or tool call for `stall_ms`. Each
 *   such part resets a provider's idle timeout, so only the watchdog ends it.
 * - `no_progress`: a model step that sends nothing at all for `stall_ms`, so the turn
 *   journals nothing (a provider whose own deadlines are off or longer).
 * - `tool`: a tool call that outlived its own timeout because the tool ignores its abort
 *   signal (tools/run.ts stops awaiting it; the watchdog reports and counts it).
 *
 * It acts through AbortSignals: the stalled step's signal is aborted (the provider request
 * with it), and the step is tried again, at most `retries` times per turn (one budget for
 * every stall of the turn); the stall after that ends the turn with error `stalled`.
 * Every stall is journaled as a `stalled` event and counted in `parley_stalls_total`.
 */

/** The reason of a step's signal aborted by the watchdog. */
export class StallError extends Error {
  constructor(
    readonly what: StallKind,
    readonly sinceMs: number,
  ) {
    super(`no progress for ${sinceMs} ms (${what})`);
    this.name = 'StallError';
  }
}

/** One model step under watch. */
export interface StepWatch {
  /** Aborted with a StallError when the step made no progress for `stall_ms`. */
  signal: AbortSignal;
  /** The stream produced output (text, reasoning, a tool call): progress. */
  output: () => void;
  /** The stream sent a part that is not output (a keep-alive): alive, but no progress. */
  keepAlive: () => void;
  stop: () => void;
}

/** What the watchdog decided about one stall, and the event that journals it. */
export interface Stall {
  action: 'retry' | 'end';
  event: NewEvent<'stalled'>;
}

const unwatched: StepWatch = {
  signal: new AbortController().signal,
  output: () => {},
  keepAlive: () => {},
  stop: () => {},
};

/** One turn's watchdog: its steps' watches and the recovery budget they share. */
export class Watchdog {
  private stalls = 0;

  constructor(
    private readonly config: WatchdogConfig,
    private readonly turnId: string,
    private readonly now: () => number = Date.now,
  ) {}

  get enabled(): boolean {
    return this.config.stallMs > 0;
  }

  /** The budget is spent: the turn ends. */
  get ended(): boolean {
    return this.stalls > this.config.retries;
  }

  /**
   * Watches one model step from its request on. The timer checks when it fires whether
   * output came meanwhile (then it waits for the rest of the window), so a fast stream
   * costs one timer per window, not one per part.
   */
  watchStep(): StepWatch {
    if (!this.enabled) return unwatched;
    const { stallMs } = this.config;
    const controller = new AbortController();
    let lastOutput = this.now();
    let keptAlive = false;
    let timer: NodeJS.Timeout | undefined;
    const check = () => {
      const quiet = this.now() - lastOutput;
      if (quiet < stallMs) {
        timer = setTimeout(check, stallMs - quiet);
        return;
      }
      controller.abort(new StallError(keptAlive ? 'model_stream' : 'no_progress', quiet));
    };
    timer = setTimeout(check, stallMs);
    return {
      signal: controller.signal,
      output: () => {
        lastOutput = this.now();
        keptAlive = false;
      },
      keepAlive: () => {
        keptAlive = true;
      },
      stop: () => clearTimeout(timer),
    };
  }

  /**
   * Spends one stall of the budget: `retry` while the turn has retries left, then `end`.
   * The caller journals the event, then counts it (`countStall`).
   */
  decide(
    what: StallKind,
    sinceMs: number,
    call: { call_id: string; tool: string } | null = null,
  ): Stall {
    this.stalls += 1;
    const action = this.ended ? 'end' : 'retry';
    return {
      action,
      event: newEvent('stalled', this.turnId, {
        what,
        since_ms: Math.round(sinceMs),
        action,
        ...(call ?? {}),
      }),
    };
  }

  /** The `error` message of a turn the watchdog ended. */
  endMessage(what: StallKind): string {
    return what === 'tool'
      ? `a tool kept running past its timeout; the turn stopped after ${this.stalls} stalls`
      : `the model made no progress for ${this.config.stallMs} ms, ${this.stalls} times`;
  }
}

/** Counts a journaled stall in `parley_stalls_total`. */
export function countStall(stall: Stall): void {
  stallsTotal.inc({ what: stall.event.data.what, action: stall.action });
}
