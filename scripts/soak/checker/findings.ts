import type { EventRow, Snapshot, TurnRow } from './snapshot.js';

/**
 * What the checker can find, by the figure it counts toward:
 * - `lost`: something acknowledged (a turn's 202, an answer's 200) is not in the database,
 *   or a turn's end was never journaled;
 * - `doubled`: something that must exist once exists twice (a terminal event for one
 *   turn, a transcript row, a tool run, an answer);
 * - `gap`: a hole in a session's sequence, or an event past its counter;
 * - `unfinished`: an acknowledged turn still queued or running after the drain;
 * - `order`: events of a turn in an impossible order;
 * - `mismatch`: two records that must agree do not (a turn row and its terminal event, a
 *   reply and its deltas, a cancel's answer and the turn's end).
 */
export type Category = 'lost' | 'doubled' | 'gap' | 'unfinished' | 'order' | 'mismatch';

export const categories: Category[] = ['lost', 'doubled', 'gap', 'unfinished', 'order', 'mismatch'];

export interface Violation {
  category: Category;
  /** A short stable name of the rule, e.g. `terminal exactly once`. */
  check: string;
  detail: string;
}

export class Findings {
  readonly violations: Violation[] = [];
  /** Holes in journals, counted per missing sequence (a `gap` violation is per session). */
  missingSequences = 0;

  add(category: Category, check: string, detail: string): void {
    this.violations.push({ category, check, detail });
  }

  count(category: Category): number {
    return this.violations.filter((violation) => violation.category === category).length;
  }
}

export const terminalTypes = new Set(['done', 'cancelled', 'error']);

/** The snapshot indexed the ways the checks look things up. */
export class Journal {
  readonly turns = new Map<string, TurnRow>();
  readonly eventsBySession = new Map<string, EventRow[]>();
  /** Every terminal event naming each turn (by `turn_ids`). */
  readonly terminals = new Map<string, EventRow[]>();

  constructor(readonly snapshot: Snapshot) {
    for (const turn of snapshot.turns) this.turns.set(turn.turn_id, turn);
    for (const event of snapshot.events) {
      let list = this.eventsBySession.get(event.session_id);
      if (!list) this.eventsBySession.set(event.session_id, (list = []));
      list.push(event);
      if (terminalTypes.has(event.type)) {
        for (const turnId of turnIdsOf(event)) {
          let named = this.terminals.get(turnId);
          if (!named) this.terminals.set(turnId, (named = []));
          named.push(event);
        }
      }
    }
  }

  /** The one terminal event of a turn, or null when it has none or several. */
  terminalOf(turnId: string): EventRow | null {
    const named = this.terminals.get(turnId);
    return named?.length === 1 ? (named[0] as EventRow) : null;
  }
}

export function turnIdsOf(event: EventRow): string[] {
  const ids: unknown = event.payload?.turn_ids;
  return Array.isArray(ids) ? ids.map(String) : [];
}

/** `session S seq N type` for details. */
export function where(event: EventRow): string {
  return `session ${event.session_id} #${event.sequence} ${event.type}`;
}
