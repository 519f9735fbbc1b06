import { backoffDelay, sleep, type BackoffOptions } from './backoff.js';
import { ParleyClientError } from './errors.js';
import { isTerminalEvent, type ParleyEvent, type TypingEvent } from './events.js';
import { readSse } from './sse.js';
import type { SessionProjection } from './types.js';

/**
 * A durable subscription to one session's events (PROTOCOL.md §3 and §7).
 *
 * States: `connecting` (first open, or after resume) → `open` (200, events flowing) →
 * `reconnecting` (the stream dropped or could not open; waiting a backoff delay before the
 * next try) → `open` … → `closed` (stopped: a settled turn, close(), a fatal error).
 *
 * The cursor is the highest sequence whose `onEvent` has RETURNED: it is what the next
 * connection sends as `Last-Event-ID`, so an event the consumer had not finished is
 * delivered again, and one it had finished never is (dedupe by sequence).
 */
export type ConnectionState = 'connecting' | 'open' | 'reconnecting' | 'closed';

/**
 * Why a subscription went `closed`:
 * - `settled`: stopOnTerminal, and the turn ended or waits for a person (done, cancelled,
 *   error, input_required) with nothing else pending; `resume()` reopens it.
 * - `closed`: close() or the caller's signal.
 * - `fatal`: an answer that retrying cannot change (401, 403, 404, 400).
 * - `handler_error`: onEvent or onResync threw; the event is not counted as processed.
 */
export type StopReason = 'settled' | 'closed' | 'fatal' | 'handler_error';

export interface StateChange {
  state: ConnectionState;
  /** The cursor the (next) connection resumes after. */
  after: number;
  /** `reconnecting`: the number of this retry (1, 2, …) and the wait before it. */
  attempt?: number;
  delayMs?: number;
  /** `reconnecting`: why the last connection failed; `closed`: why it stopped, if an error. */
  error?: Error;
  /** `closed` only. */
  reason?: StopReason;
}

export interface SubscribeOptions {
  /** The highest sequence already processed (default 0: from the beginning). */
  after?: number;
  /** Called once per durable event, in sequence order; awaited before the next. */
  onEvent: (event: ParleyEvent) => void | Promise<void>;
  /**
   * History the cursor needs is gone (410) or the cursor is ahead of the server (409):
   * rebuild from this projection; the stream resumes after `projection.latest_sequence`.
   * Nothing between the old cursor and that point may be assumed to have succeeded.
   */
  onResync?: (projection: SessionProjection) => void | Promise<void>;
  onState?: (change: StateChange) => void;
  /** Live-only "assistant is writing…" signals. */
  onTyping?: (event: TypingEvent) => void;
  signal?: AbortSignal;
  /**
   * Default true: stop (state `closed`, reason `settled`) after done, cancelled, error or
   * input_required once the session has nothing else pending; call resume() after acting.
   * False: keep one stream open for good (other participants' messages, later turns).
   */
  stopOnTerminal?: boolean;
  backoff?: BackoffOptions;
  /**
   * No byte for this long (keep-alives come every 15 s) means a dead connection: reconnect.
   * Default 45 s.
   */
  idleTimeoutMs?: number;
}

/** The I/O a subscription needs, as functions (so the loop holds no HTTP details). */
export interface SubscriptionIo {
  open(after: number, signal: AbortSignal): Promise<Response>;
  getSession(signal: AbortSignal): Promise<SessionProjection>;
}

/** Thrown around a consumer callback's own error, so it is never mistaken for a network one. */
class HandlerError extends Error {
  constructor(readonly original: unknown) {
    super(original instanceof Error ? original.message : String(original));
    this.name = 'HandlerError';
  }
}

type StopWaiter = (change: StateChange) => void;

export class Subscription {
  /** Highest sequence fully processed by onEvent (or jumped to by a resync). */
  cursor: number;
  state: ConnectionState = 'closed';
  private controller = new AbortController();
  private running = false;
  private ended = false;
  private stopWaiters: StopWaiter[] = [];
  private lastStop: StateChange | null = null;

  constructor(
    private readonly io: SubscriptionIo,
    private readonly options: SubscribeOptions,
  ) {
    this.cursor = options.after ?? 0;
    if (options.signal?.aborted) {
      this.ended = true;
      this.lastStop = { state: 'closed', after: this.cursor, reason: 'closed' };
      return;
    }
    options.signal?.addEventListener('abort', () => this.close(), { once: true });
    this.start();
  }

  /** Reopens a stopped subscription from its cursor (after acting on a settled turn). */
  resume(): void {
    if (this.ended || this.running) return;
    this.start();
  }

  /** Stops for good: aborts the stream and any wait; accepted work on the server goes on. */
  close(): void {
    this.ended = true;
    this.controller.abort();
    if (!this.running && this.state !== 'closed') this.stop({ reason: 'closed' });
  }

  /** Resolves at the next stop, or at once with the last one if stopped now. */
  whenStopped(): Promise<StateChange> {
    if (!this.running && this.lastStop) return Promise.resolve(this.lastStop);
    return new Promise((resolve) => this.stopWaiters.push(resolve));
  }

  private start(): void {
    this.running = true;
    this.lastStop = null;
    this.controller = new AbortController();
    const signal = this.controller.signal;
    this.emit({ state: 'connecting' });
    this.loop(signal).then(
      (stop) => this.stop(stop),
      (error: unknown) =>
        this.stop({
          reason: 'fatal',
          error: error instanceof Error ? error : new Error(String(error)),
        }),
    );
  }

  private stop(stop: { reason: StopReason; error?: Error }): void {
    this.running = false;
    const change: StateChange = { state: 'closed', after: this.cursor, ...stop };
    this.lastStop = change;
    this.emit(change);
    const waiters = this.stopWaiters;
    this.stopWaiters = [];
    for (const waiter of waiters) waiter(change);
  }

  private emit(change: Omit<StateChange, 'after'>): void {
    this.state = change.state;
    this.options.onState?.({ ...change, after: this.cursor });
  }

  private async loop(signal: AbortSignal): Promise<{ reason: StopReason; error?: Error }> {
    const backoff = this.options.backoff;
    let failures = 0;
    let resyncs = 0;
    for (;;) {
      if (signal.aborted) return { reason: 'closed' };
      let failure: Error;
      try {
        const outcome = await this.connect(signal, () => {
          failures = 0;
          resyncs = 0;
        });
        if (outcome === 'settled') return { reason: 'settled' };
        failure = new ParleyClientError('network_error', 'the server ended the stream');
      } catch (error) {
        if (signal.aborted) return { reason: 'closed' };
        if (error instanceof HandlerError) {
          const original =
            error.original instanceof Error ? error.original : new Error(String(error.original));
          return { reason: 'handler_error', error: original };
        }
        if (error instanceof ParleyClientError && isResync(error)) {
          try {
            // A second resync in a row without a working stream waits, so a confused
            // server cannot make this loop spin.
            if (resyncs > 0 && !(await sleep(backoffDelay(resyncs, backoff), signal))) {
              return { reason: 'closed' };
            }
            resyncs++;
            await this.resync(signal);
            continue;
          } catch (resyncError) {
            if (signal.aborted) return { reason: 'closed' };
            if (resyncError instanceof HandlerError) {
              return { reason: 'handler_error', error: toError(resyncError.original) };
            }
            if (!isRetryable(resyncError)) return { reason: 'fatal', error: toError(resyncError) };
            failure = toError(resyncError);
          }
        } else if (isRetryable(error)) {
          failure = toError(error);
        } else {
          return { reason: 'fatal', error: toError(error) };
        }
      }
      failures++;
      const delayMs = backoffDelay(failures, backoff);
      this.emit({ state: 'reconnecting', attempt: failures, delayMs, error: failure });
      if (!(await sleep(delayMs, signal))) return { reason: 'closed' };
    }
  }

  /**
   * One connection: open after the cursor, deliver events in order until the stream ends
   * ('ended') or a settled turn stops it ('settled'). Throws on failure.
   */
  private async connect(signal: AbortSignal, onAlive: () => void): Promise<'ended' | 'settled'> {
    const connection = new AbortController();
    const onAbort = () => connection.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    const watchdog = new Watchdog(this.options.idleTimeoutMs ?? 45_000, () => connection.abort());
    try {
      watchdog.kick();
      const response = await this.io.open(this.cursor, connection.signal);
      if (!response.body) throw new ParleyClientError('bad_response', 'the stream has no body');
      this.emit({ state: 'open' });
      watchdog.kick();
      for await (const frame of readSse(response.body)) {
        watchdog.pause();
        onAlive();
        if (frame.kind === 'message') {
          if (frame.id === null || frame.event === 'typing') {
            if (frame.event === 'typing')
              this.options.onTyping?.(parseData(frame.data) as TypingEvent);
          } else {
            const event = parseData(frame.data) as ParleyEvent;
            const sequence = typeof event.sequence === 'number' ? event.sequence : Number(frame.id);
            if (sequence > this.cursor + 1) {
              // Never skip a range: reconnect from the cursor (the server fills it, or 410s).
              throw new ParleyClientError('network_error', `a gap after sequence ${this.cursor}`);
            }
            if (sequence === this.cursor + 1) {
              try {
                await this.options.onEvent(event);
              } catch (error) {
                throw new HandlerError(error);
              }
              this.cursor = sequence;
              if (
                this.options.stopOnTerminal !== false &&
                isTerminalEvent(event) &&
                (await this.settled(connection.signal))
              ) {
                return 'settled';
              }
            }
          }
        }
        if (signal.aborted) return 'ended';
        watchdog.kick();
      }
      if (watchdog.fired) throw idleError(this.options.idleTimeoutMs ?? 45_000);
      return 'ended';
    } catch (error) {
      if (watchdog.fired && !signal.aborted) throw idleError(this.options.idleTimeoutMs ?? 45_000);
      if (error instanceof ParleyClientError || error instanceof HandlerError) throw error;
      if (signal.aborted) throw error;
      // Reading a body that the network cut (reset, "terminated").
      throw new ParleyClientError('network_error', `the stream broke: ${toError(error).message}`);
    } finally {
      watchdog.pause();
      signal.removeEventListener('abort', onAbort);
      connection.abort();
    }
  }

  /**
   * After a terminal event: stop only when the session has nothing else going on (no
   * queued or running turn, nothing newer than the cursor), so a replay of old turns or a
   * queued next turn does not stop the stream early. When the check itself fails, stop:
   * that is the protocol's default, and resume() is the way back.
   */
  private async settled(signal: AbortSignal): Promise<boolean> {
    try {
      const projection = await this.io.getSession(signal);
      if (projection.latest_sequence > this.cursor) return false;
      // The waiting turn itself counts in queued_turns: a person must act before it goes on.
      if (projection.state === 'input_required') return true;
      return (
        projection.state !== 'queued' &&
        projection.state !== 'running' &&
        (projection.queued_turns ?? 0) === 0
      );
    } catch {
      return !signal.aborted;
    }
  }

  private async resync(signal: AbortSignal): Promise<void> {
    const projection = await this.io.getSession(signal);
    try {
      await this.options.onResync?.(projection);
    } catch (error) {
      throw new HandlerError(error);
    }
    this.cursor = projection.latest_sequence;
  }
}

/** Aborts a connection that received nothing for `ms`; paused while a handler runs. */
export class Watchdog {
  fired = false;
  private timer: ReturnType<typeof setTimeout> | null = null;
  constructor(
    private readonly ms: number,
    private readonly onIdle: () => void,
  ) {}
  kick(): void {
    this.pause();
    this.timer = setTimeout(() => {
      this.fired = true;
      this.onIdle();
    }, this.ms);
  }
  pause(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }
}

function isResync(error: ParleyClientError): boolean {
  return (
    (error.status === 409 && error.code === 'cursor_ahead') ||
    (error.status === 410 && error.code === 'resync_required')
  );
}

/** Network trouble, time-outs, 5xx (and 429) pass; every other answer would repeat. */
export function isRetryable(error: unknown): boolean {
  return error instanceof ParleyClientError && (error.retryable || error.status === 429);
}

export function parseData(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    throw new ParleyClientError('bad_response', 'an event whose data is not JSON');
  }
}

function idleError(ms: number): ParleyClientError {
  return new ParleyClientError('timeout', `no data on the stream for ${ms} ms`);
}

export function toError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
