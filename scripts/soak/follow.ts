import { sleep, streamEvents, type Apis, type StreamEvent } from './http.js';
import type { Ledger } from './ledger.js';
import type { Random } from './random.js';

/** A session as its client knows it: its id once admitted, and the last event it processed. */
export interface SessionView {
  sessionId: string | null;
  /** The highest sequence processed: the Last-Event-ID of the next connection. */
  cursor: number;
  /** Turns this client has seen ended, with the event type that ended them. */
  ended: Map<string, string>;
}

/** Stream silence (no event, no keep-alive) after which the client reconnects. */
const silenceMs = 8_000;

/**
 * Follows a session's events from its cursor until `settled()` says the round is over or
 * `deadline` passes, reconnecting (to the next API, with backoff) whenever the connection
 * ends or goes silent. Checks what the protocol promises a reconnecting client: each
 * event exactly once, in sequence order, without a gap. Returns false on the deadline.
 */
export async function follow(
  view: SessionView,
  sessionId: string,
  apis: Apis,
  ledger: Ledger,
  random: Random,
  handlers: { onEvent: (event: StreamEvent) => void; settled: () => boolean; deadline: number },
): Promise<boolean> {
  for (let connection = 0; ; connection++) {
    if (handlers.settled()) return true;
    if (Date.now() > handlers.deadline) return false;
    if (connection > 0) {
      ledger.counters.streamReconnects += 1;
      await sleep(random.between(50, Math.min(1_000, 50 * 2 ** Math.min(connection, 5))));
    }
    const controller = new AbortController();
    let silence = setTimeout(() => controller.abort(), silenceMs);
    const deadlineTimer = setTimeout(
      () => controller.abort(),
      Math.max(0, handlers.deadline - Date.now()),
    );
    try {
      const events = streamEvents(
        apis.pick(),
        sessionId,
        view.cursor,
        controller.signal,
        (detail) => ledger.violation('stream framing', detail),
      );
      for await (const event of events) {
        clearTimeout(silence);
        silence = setTimeout(() => controller.abort(), silenceMs);
        if (event.sequence <= view.cursor) {
          ledger.violation(
            'stream duplicate',
            `session ${sessionId}: event ${event.sequence} delivered again after ${view.cursor}`,
          );
          continue;
        }
        if (event.sequence !== view.cursor + 1) {
          ledger.violation(
            'stream gap',
            `session ${sessionId}: after ${view.cursor} the stream delivered ${event.sequence}`,
          );
        }
        view.cursor = event.sequence;
        noteTerminal(view, event, ledger);
        handlers.onEvent(event);
        if (handlers.settled()) return true;
      }
    } catch (error) {
      const message = (error as Error).message;
      // A cursor the server calls "ahead" means events this client received are gone.
      if (message.includes('answered 409')) {
        ledger.violation(
          'stream cursor',
          `session ${sessionId}: the server has no event ${view.cursor} any more (409 cursor_ahead)`,
        );
        return false;
      }
    } finally {
      clearTimeout(silence);
      clearTimeout(deadlineTimer);
      controller.abort();
    }
  }
}

function noteTerminal(view: SessionView, event: StreamEvent, ledger: Ledger): void {
  if (event.type !== 'done' && event.type !== 'cancelled' && event.type !== 'error') return;
  for (const turnId of (event.turn_ids as string[] | undefined) ?? []) {
    const earlier = view.ended.get(turnId);
    if (earlier !== undefined) {
      ledger.violation(
        'stream doubled',
        `turn ${turnId} ended twice on the stream: ${earlier}, then ${event.type} at ${event.sequence}`,
      );
    }
    view.ended.set(turnId, event.type);
  }
}
