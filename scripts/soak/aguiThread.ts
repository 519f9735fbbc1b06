import { readSse } from '../../src/client/sse.js';
import { sleep, type Apis } from './http.js';
import type { Ledger, ThreadRecord } from './ledger.js';
import type { Random } from './random.js';

/** Stream silence (no frame, no keep-alive) after which the follower reconnects. */
const silenceMs = 8_000;
/** Once its session's loop is done: how long the stream must be quiet, no run open. */
const quietMs = 1_500;
/** Once its session's loop is done: how long it follows at most. */
const tailMs = 30_000;

/** An AG-UI event as the thread stream sends it (its `timestamp` dropped). */
type AgUiEvent = Record<string, unknown> & { type: string };

/**
 * Follows one session through the AG-UI thread stream (`GET /ag-ui/default/threads/{id}/
 * events`, docs/protocols.md, "The thread's stream") from its first event (`?after=0`),
 * across API kills: a connection that ends or goes silent is opened again on the next API
 * process with `Last-Event-ID`, the id of the last write it received whole. What it
 * received after that id is dropped (the server sends that write again), and the re-opened
 * run's `RUN_STARTED` and open message starts are taken as the continuation they are, not
 * as new events. The events it kept go to the ledger (`threads`): the checker folds the
 * session's journal the same way and holds them to it, event for event. It follows until
 * `finished()` says its session's loop is done and the stream has been quiet with no run
 * open, or for `tailMs` more at most.
 */
export async function followThread(
  apis: Apis,
  ledger: Ledger,
  random: Random,
  sessionId: string,
  finished: () => boolean,
): Promise<void> {
  const record: ThreadRecord = { sessionId, events: [], lastId: 0 };
  ledger.threads.push(record);
  ledger.counters.aguiThreads += 1;
  const open = new OpenParts();
  let lastFrameAt = Date.now();
  let finishedAt: number | null = null;
  const over = () => {
    if (!finished()) return false;
    finishedAt ??= Date.now();
    const quiet = Date.now() - lastFrameAt > quietMs && open.run === null;
    return quiet || Date.now() - finishedAt > tailMs;
  };
  for (let connection = 0; !over(); connection++) {
    if (connection > 0) {
      ledger.counters.aguiThreadReconnects += 1;
      await sleep(random.between(50, Math.min(1_000, 50 * 2 ** Math.min(connection, 5))));
    }
    const controller = new AbortController();
    let heard = Date.now();
    const watch = setInterval(() => {
      if (Date.now() - heard > silenceMs || over()) controller.abort();
    }, 250);
    try {
      const response = await fetch(
        `${apis.pick()}/ag-ui/default/threads/${encodeURIComponent(sessionId)}/events`,
        {
          headers: { accept: 'text/event-stream', 'last-event-id': String(record.lastId) },
          signal: controller.signal,
        },
      );
      if (response.status !== 200 || !response.body) {
        await response.body?.cancel().catch(() => {});
        if (response.status < 500) {
          ledger.violation('ag-ui thread', `${sessionId}: answered ${response.status}`);
          return;
        }
        continue;
      }
      // A run open at the cursor is re-opened first: its starts again, the same ids.
      const reopening = open.starts();
      let tentative: AgUiEvent[] = [];
      for await (const frame of readSse(response.body)) {
        heard = Date.now();
        if (frame.kind !== 'message' || frame.data === '') continue;
        lastFrameAt = Date.now();
        const { timestamp: _timestamp, ...event } = JSON.parse(frame.data) as AgUiEvent;
        const again = reopening.findIndex((start) => sameEvent(start, event));
        if (again === 0) reopening.shift();
        else {
          if (reopening.length > 0) {
            ledger.violation(
              'ag-ui thread reopen',
              `${sessionId}: after ${record.lastId} expected ${JSON.stringify(reopening[0])}, got ${JSON.stringify(event)}`,
            );
            reopening.length = 0;
          }
          tentative.push(event);
        }
        if (frame.id !== null) {
          for (const kept of tentative) {
            record.events.push(kept);
            open.apply(kept);
          }
          tentative = [];
          record.lastId = Number(frame.id);
        }
      }
    } catch {
      // A broken or silent connection: the next one resumes after the last whole write.
    } finally {
      clearInterval(watch);
    }
  }
}

/** Two events alike, whatever their key order. */
function sameEvent(a: AgUiEvent, b: AgUiEvent): boolean {
  return canonical(a) === canonical(b);
}

export function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) =>
    inner !== null && typeof inner === 'object' && !Array.isArray(inner)
      ? Object.fromEntries(Object.entries(inner).sort(([x], [y]) => (x < y ? -1 : 1)))
      : inner,
  );
}

/** What the events kept so far leave open: the run, and its messages begun but not ended. */
class OpenParts {
  run: AgUiEvent | null = null;
  private readonly parts = new Map<string, AgUiEvent>();

  apply(event: AgUiEvent): void {
    const id = typeof event.messageId === 'string' ? event.messageId : '';
    switch (event.type) {
      case 'RUN_STARTED':
        this.run = event;
        this.parts.clear();
        return;
      case 'RUN_FINISHED':
      case 'RUN_ERROR':
        this.run = null;
        this.parts.clear();
        return;
      case 'TEXT_MESSAGE_START':
      case 'REASONING_START':
      case 'REASONING_MESSAGE_START':
        this.parts.set(`${event.type}:${id}`, event);
        return;
      case 'TEXT_MESSAGE_END':
        this.parts.delete(`TEXT_MESSAGE_START:${id}`);
        return;
      case 'REASONING_END':
        this.parts.delete(`REASONING_START:${id}`);
        return;
      case 'REASONING_MESSAGE_END':
        this.parts.delete(`REASONING_MESSAGE_START:${id}`);
        return;
    }
  }

  /** The events a reconnect re-opens with, in the server's order (fold.ts `reopen`). */
  starts(): AgUiEvent[] {
    if (this.run === null) return [];
    const order = ['REASONING_START', 'REASONING_MESSAGE_START', 'TEXT_MESSAGE_START'];
    const parts = [...this.parts.values()].sort(
      (a, b) => order.indexOf(a.type) - order.indexOf(b.type),
    );
    return [this.run, ...parts];
  }
}
