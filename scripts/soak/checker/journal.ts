import { terminalTypes, turnIdsOf, where, type Findings, type Journal } from './findings.js';
import type { EventRow } from './snapshot.js';

/** Per session: every sequence from earliest to the counter, and nothing past it. */
export function checkGapless(journal: Journal, findings: Findings): void {
  for (const session of journal.snapshot.sessions) {
    const sequences = (journal.eventsBySession.get(session.session_id) ?? []).map(
      (event) => event.sequence,
    );
    const present = new Set(sequences);
    const missing: number[] = [];
    for (let sequence = session.earliest_sequence; sequence <= session.last_sequence; sequence++) {
      if (!present.has(sequence)) missing.push(sequence);
    }
    const beyond = sequences.filter(
      (sequence) => sequence > session.last_sequence || sequence < session.earliest_sequence,
    );
    if (missing.length > 0 || beyond.length > 0) {
      findings.missingSequences += missing.length;
      findings.add(
        'gap',
        'gapless journal',
        `session ${session.session_id} (${session.earliest_sequence}..${session.last_sequence}): missing ${list(missing)}; outside the counter ${list(beyond)}`,
      );
    }
  }
}

/**
 * Every admitted turn is named by exactly one terminal event, of the type its row says,
 * in its own session; a stored post by none; no terminal event names a turn that does
 * not exist.
 */
export function checkTerminals(journal: Journal, findings: Findings): void {
  for (const turn of journal.snapshot.turns) {
    const named = journal.terminals.get(turn.turn_id) ?? [];
    if (turn.state === 'stored') {
      if (named.length > 0) {
        findings.add(
          'mismatch',
          'stored post ends',
          `stored post ${turn.turn_id} is named by ${where(named[0] as EventRow)}`,
        );
      }
      continue;
    }
    if (named.length > 1) {
      findings.add(
        'doubled',
        'terminal exactly once',
        `turn ${turn.turn_id} is named by ${named.length} terminal events: ${named.map(where).join(', ')}`,
      );
      continue;
    }
    const terminal = named[0];
    if (!terminal) {
      if (turn.state === 'queued' || turn.state === 'running') {
        findings.add(
          'unfinished',
          'every turn ends',
          `turn ${turn.turn_id} is still ${turn.state} in session ${turn.session_id}`,
        );
      } else {
        findings.add(
          'lost',
          'terminal exactly once',
          `turn ${turn.turn_id} is ${turn.state} but no terminal event names it`,
        );
      }
      continue;
    }
    if (terminal.session_id !== turn.session_id) {
      findings.add(
        'mismatch',
        'terminal in its session',
        `turn ${turn.turn_id} of session ${turn.session_id} is ended by ${where(terminal)}`,
      );
    }
    if (terminal.type !== turn.state) {
      findings.add(
        'mismatch',
        'turn row agrees',
        `turn ${turn.turn_id} is ${turn.state} but ended by ${where(terminal)}`,
      );
    }
  }
  for (const turnId of journal.terminals.keys()) {
    if (!journal.turns.has(turnId)) {
      const event = (journal.terminals.get(turnId) as EventRow[])[0] as EventRow;
      findings.add(
        'mismatch',
        'terminal names a turn',
        `${where(event)} names ${turnId}, which was never admitted`,
      );
    }
  }
}

/** Events that belong to a burst being answered, journaled under its lead turn's id. */
const burstTypes = new Set([
  'turn_started',
  'attempt_reset',
  'text_delta',
  'tool_call',
  'tool_result',
  'input_required',
  'input_resolved',
  'usage',
  'stalled',
  'done',
  'cancelled',
  'error',
]);

/**
 * The order of each session's journal:
 * - nothing of a turn before its admission (`message`), nothing after its end;
 * - a text delta only inside an attempt of its turn (after `turn_started`, before the end);
 * - a terminal event lists its turns in admission order, after each was admitted;
 * - `done` answers exactly the turns its last `turn_started` listed.
 */
export function checkOrder(journal: Journal, findings: Findings): void {
  for (const [sessionId, events] of journal.eventsBySession) {
    const ended = new Map<string, number>();
    const started = new Map<string, string[]>();
    for (const event of events) {
      const turnId = event.turn_id;
      if (turnId && burstTypes.has(event.type)) {
        const admitted = journal.turns.get(turnId)?.admitted_sequence;
        if (admitted !== undefined && event.sequence <= admitted) {
          findings.add(
            'order',
            'after admission',
            `${where(event)} of ${turnId} comes before its admission #${admitted}`,
          );
        }
        const endedAt = ended.get(turnId);
        if (endedAt !== undefined) {
          findings.add(
            'order',
            'nothing after the end',
            `${where(event)} of ${turnId} comes after its end at #${endedAt}`,
          );
        }
      }
      if (event.type === 'turn_started' && turnId) started.set(turnId, turnIdsOf(event));
      if (event.type === 'attempt_reset' && turnId) started.delete(turnId);
      if (event.type === 'text_delta' && turnId && !started.has(turnId)) {
        findings.add(
          'order',
          'deltas inside an attempt',
          `${where(event)} of ${turnId} outside any attempt`,
        );
      }
      if (!terminalTypes.has(event.type)) continue;
      const named = turnIdsOf(event);
      const positions = named.map((id) => journal.turns.get(id)?.position ?? null);
      for (let index = 1; index < positions.length; index++) {
        const previous = positions[index - 1];
        const current = positions[index];
        if (previous != null && current != null && current <= previous) {
          findings.add(
            'order',
            'admission order',
            `${where(event)} lists ${named.join(', ')} out of admission order`,
          );
          break;
        }
      }
      for (const id of named) {
        const admitted = journal.turns.get(id)?.admitted_sequence;
        if (admitted !== undefined && event.sequence <= admitted) {
          findings.add(
            'order',
            'after admission',
            `${where(event)} ends ${id} before its admission #${admitted}`,
          );
        }
        if (!ended.has(id)) ended.set(id, event.sequence);
      }
      const lead = event.turn_id;
      if (event.type === 'done' && lead) {
        const attempt = started.get(lead);
        if (!attempt || !sameSet(attempt, named)) {
          findings.add(
            'mismatch',
            'done answers its burst',
            `${where(event)} answers [${named.join(', ')}] but the attempt started [${(attempt ?? []).join(', ')}] in session ${sessionId}`,
          );
        }
      }
      if (lead) started.delete(lead);
    }
  }
}

function sameSet(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((value) => b.includes(value));
}

function list(values: number[]): string {
  if (values.length === 0) return 'none';
  const shown = values.slice(0, 8).join(', ');
  return values.length > 8 ? `${shown}, … (${values.length})` : shown;
}
