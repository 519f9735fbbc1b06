import { backoffDelay, sleep, type BackoffOptions } from './backoff.js';
import type { ParleyEvent } from './events.js';
import { readSse } from './sse.js';
import { isRetryable, parseData, toError, Watchdog } from './subscription.js';
import type { PanelView } from './types.js';

/**
 * What the user stream (`GET /api/v1/me/events`, PROTOCOL.md "The user stream") sends:
 * `ready` (where it starts: resumed from the cursor, or from now), `resync` (the cursor
 * was too old: reload what the screens show), a journal event of a session the caller
 * may see, a workspace panel as it changed, or one removed. An item may come again after a reconnect:
 * a session event is identified by its session and sequence, a panel by its id and
 * `updated_at`.
 */
export type UserStreamFrame =
  | { type: 'ready'; resumed: boolean }
  | { type: 'resync'; resumed: false }
  | { type: 'session_event'; session_id: string; event: ParleyEvent }
  | { type: 'panel'; panel: PanelView }
  | { type: 'panel_removed'; panel_id: string; workspace_id: string | null };

export type UserStreamState = 'connecting' | 'open' | 'reconnecting' | 'closed';

export interface UserStreamOptions {
  /** The cursor to resume from (a frame's id from an earlier stream); none: from now. */
  lastEventId?: string;
  /** Called for each frame, in order; awaited before the next. */
  onFrame: (frame: UserStreamFrame) => void | Promise<void>;
  onState?: (state: UserStreamState, error?: Error) => void;
  signal?: AbortSignal;
  backoff?: BackoffOptions;
  /** No byte for this long (keep-alives come every 15 s) means a dead connection. */
  idleTimeoutMs?: number;
}

/**
 * A durable subscription to the caller's user stream: reconnects with backoff and
 * `Last-Event-ID` (the id of the last frame whose `onFrame` returned), until closed or
 * answered with an error that retrying cannot change.
 */
export class UserStream {
  /** The id of the last frame processed: where a reconnect resumes. */
  cursor: string | null;
  state: UserStreamState = 'connecting';
  private readonly controller = new AbortController();
  readonly done: Promise<void>;

  constructor(
    private readonly open: (lastEventId: string | null, signal: AbortSignal) => Promise<Response>,
    private readonly options: UserStreamOptions,
  ) {
    this.cursor = options.lastEventId ?? null;
    options.signal?.addEventListener('abort', () => this.close(), { once: true });
    this.done = this.loop().then(
      () => this.emit('closed'),
      (error: unknown) => this.emit('closed', toError(error)),
    );
  }

  close(): void {
    this.controller.abort();
  }

  private emit(state: UserStreamState, error?: Error): void {
    this.state = state;
    this.options.onState?.(state, error);
  }

  private async loop(): Promise<void> {
    const signal = this.controller.signal;
    let failures = 0;
    while (!signal.aborted) {
      try {
        await this.connect(signal, () => (failures = 0));
      } catch (error) {
        if (signal.aborted) return;
        if (!isRetryable(error)) throw error;
      }
      if (signal.aborted) return;
      failures++;
      const delayMs = backoffDelay(failures, this.options.backoff);
      this.emit('reconnecting');
      if (!(await sleep(delayMs, signal))) return;
    }
  }

  private async connect(signal: AbortSignal, onAlive: () => void): Promise<void> {
    const connection = new AbortController();
    const onAbort = () => connection.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    const idleMs = this.options.idleTimeoutMs ?? 45_000;
    const watchdog = new Watchdog(idleMs, () => connection.abort());
    try {
      this.emit('connecting');
      watchdog.kick();
      const response = await this.open(this.cursor, connection.signal);
      if (!response.body) return;
      this.emit('open');
      watchdog.kick();
      for await (const frame of readSse(response.body)) {
        watchdog.pause();
        onAlive();
        if (frame.kind === 'message') {
          await this.options.onFrame(parseData(frame.data) as UserStreamFrame);
          if (frame.id !== null) this.cursor = frame.id;
        }
        watchdog.kick();
      }
    } finally {
      watchdog.pause();
      signal.removeEventListener('abort', onAbort);
    }
  }
}
