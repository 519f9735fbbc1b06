import { AgUiFold } from '../../../src/api/agui/fold.js';
import type { ParleyEvent } from '../../../src/protocol/events.js';
import { canonical } from '../aguiThread.js';
import type { Ledger, ThreadRecord } from '../ledger.js';
import type { Findings, Journal } from './findings.js';

/** How many events the checker compared, over how many threads. */
export interface ThreadFigures {
  threads: number;
  events: number;
}

/**
 * The AG-UI thread stream (docs/protocols.md, "The thread's stream"), held to the journal:
 * the session's whole journal folded into AG-UI events (the adapter's own fold, a pure
 * function of the journal, here the reference) must begin with exactly the events the
 * follower kept across its reconnects — every run, its own or not (the session loop's
 * turns are posted through Parley's API, never through AG-UI), every message, tool call,
 * result, interrupt and end. The first difference is named: an event it got again, or past
 * the journal's end (`doubled`), one it never got (`gap`), one it got elsewhere (`order`).
 * The client may have stopped before the journal's end: only what it kept is compared.
 */
export function checkAguiThreads(
  journal: Journal,
  ledger: Ledger,
  findings: Findings,
): ThreadFigures {
  let events = 0;
  for (const record of ledger.threads) {
    const expected = foldedThread(journal, record).map(canonical);
    const received = record.events.map(canonical);
    events += received.length;
    const at = received.findIndex((event, index) => event !== expected[index]);
    if (at === -1) continue;
    const event = received[at] as string;
    const due = expected[at];
    const detail = `thread ${record.sessionId}, event ${at + 1} of ${received.length} (last id ${record.lastId}): got ${event.slice(0, 160)}, the journal says ${String(due).slice(0, 160)}`;
    const rule = 'AG-UI thread stream: every event once, in order';
    if (due === undefined || received.slice(0, at).includes(event)) {
      findings.add('doubled', rule, detail);
    } else if (!received.slice(at).includes(due)) {
      findings.add('gap', rule, detail);
    } else {
      findings.add('order', rule, detail);
    }
  }
  return { threads: ledger.threads.length, events };
}

/** The session's journal as the thread stream shows it from `?after=0`. */
function foldedThread(journal: Journal, record: ThreadRecord): unknown[] {
  const fold = new AgUiFold({ threadId: record.sessionId });
  for (const event of journal.eventsBySession.get(record.sessionId) ?? []) {
    fold.apply(event.payload as ParleyEvent);
  }
  fold.settle();
  // Through JSON, as the wire has them (fields left undefined are not sent).
  return fold.take().map((frame) => JSON.parse(JSON.stringify(frame.event)) as unknown);
}
