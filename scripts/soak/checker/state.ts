import { canonical } from '../aguiThread.js';
import type { Ledger } from '../ledger.js';
import { where, type Findings, type Journal } from './findings.js';
import type { EventRow } from './snapshot.js';

/**
 * Sessions with state (docs/PROTOCOL.md, "Sessions with state"; the soak's `stateful`
 * agent, state.ts):
 * - a session's `data` is the fold of its journal's `state_changed` events (each carries
 *   the data whole: the last one is the state; none, no state written) (`mismatch`);
 * - every state an AG-UI run carried and its 200 acknowledged is journaled exactly once,
 *   `by: user`, with that run's turn and before its `message` (`lost`, `doubled`, `order`);
 * - a `state` turn that ended `done` committed its model's change with it: a
 *   `state_changed` `by: tool` of its burst, carrying the `by` its `update_state` set
 *   (`lost`).
 */
export function checkState(journal: Journal, ledger: Ledger, findings: Findings): number {
  const changes = new Map<string, EventRow[]>();
  for (const event of journal.snapshot.events) {
    if (event.type !== 'state_changed') continue;
    changes.set(event.session_id, [...(changes.get(event.session_id) ?? []), event]);
  }
  for (const session of journal.snapshot.sessions) {
    if (session.data === undefined) continue; // a history made up in a test
    const last = changes.get(session.session_id)?.at(-1);
    const folded = last ? canonical(last.payload?.data ?? null) : canonical(null);
    if (canonical(session.data) !== folded) {
      findings.add(
        'mismatch',
        "a session's state is its journal's",
        `session ${session.session_id} holds ${canonical(session.data)}, its journal ${last ? `says ${folded} at #${last.sequence}` : 'changed nothing'}`,
      );
    }
  }

  for (const told of ledger.states) {
    const journaled = (changes.get(told.sessionId) ?? []).filter(
      (event) => event.turn_id === told.turnId && event.payload?.by === 'user',
    );
    const detail = `run ${told.turnId} carried ${canonical(told.data)} (200)`;
    const same = journaled.filter(
      (event) => canonical(event.payload?.data) === canonical(told.data),
    );
    if (same.length === 0) {
      findings.add(
        'lost',
        'an acknowledged state is journaled with its run',
        `${detail}; its session ${told.sessionId} journaled ${journaled.length > 0 ? journaled.map((event) => canonical(event.payload?.data)).join(', ') : 'none'}`,
      );
      continue;
    }
    if (journaled.length > 1) {
      findings.add(
        'doubled',
        'an acknowledged state is journaled with its run',
        `${detail}: ${journaled.map(where).join(', ')}`,
      );
    }
    const message = (journal.eventsBySession.get(told.sessionId) ?? []).find(
      (event) => event.type === 'message' && event.turn_id === told.turnId,
    );
    const change = same[0] as EventRow;
    if (message && message.sequence < change.sequence) {
      findings.add(
        'order',
        'an acknowledged state is journaled with its run',
        `${detail}: ${where(change)} after the run's ${where(message)}`,
      );
    }
  }

  let committed = 0;
  for (const turn of ledger.turns.values()) {
    if (turn.kind !== 'state') continue;
    const terminal = journal.terminalOf(turn.turnId);
    if (terminal?.type !== 'done') continue;
    const lead = String(terminal.turn_id);
    const made = (changes.get(turn.sessionId) ?? []).some(
      (event) =>
        event.turn_id === lead &&
        event.payload?.by === 'tool' &&
        event.payload?.data?.by === turn.turnId &&
        event.sequence < terminal.sequence,
    );
    if (made) committed += 1;
    else {
      findings.add(
        'lost',
        "a turn's state change is committed with it",
        `${where(terminal)}: ${turn.turnId} is done, but no state_changed by tool carries its change`,
      );
    }
  }
  return committed;
}
