import { stoppedPrefix } from '../budgets.js';
import { where, type Findings, type Journal } from './findings.js';
import type { EventRow } from './snapshot.js';

/**
 * Budget extensions (kind `budget_extension`), held to what their answer said:
 * - an approved extension resumes its turn: the turn goes on to its next model step and
 *   does not finish `I stopped here` (the grant was lost), nor ask again for the budget it
 *   was just given (the soak's rounds need one grant; a second request means the resumed
 *   turn did not see the first);
 * - a refused one finishes its turn at once with `I stopped here`, and the turn never
 *   asks again (a refused turn that ran on used a budget nobody gave).
 * A turn cancelled meanwhile, or still open, is judged by the other rules.
 */
export function checkBudgets(journal: Journal, findings: Findings): number {
  const requestEvents = new Map<string, EventRow>();
  const askedByTurn = new Map<string, EventRow[]>();
  for (const event of journal.snapshot.events) {
    if (event.type !== 'input_required' || event.payload?.kind !== 'budget_extension') continue;
    requestEvents.set(String(event.payload?.request_id), event);
    const turnId = String(event.turn_id);
    askedByTurn.set(turnId, [...(askedByTurn.get(turnId) ?? []), event]);
  }
  let answered = 0;
  for (const request of journal.snapshot.requests) {
    if (request.kind !== 'budget_extension' || request.state !== 'answered') continue;
    answered += 1;
    const terminal = journal.terminalOf(request.turn_id);
    if (!terminal || terminal.type !== 'done') continue;
    const asked = requestEvents.get(request.request_id);
    const later = (askedByTurn.get(request.turn_id) ?? []).filter(
      (event) => asked !== undefined && event.sequence > asked.sequence,
    );
    const content = String(terminal.payload?.final_message?.content ?? '');
    const stopped = content.startsWith(stoppedPrefix);
    if (request.approved && (stopped || later.length > 0)) {
      findings.add(
        'lost',
        'approved extension resumes once',
        `${where(terminal)}: request ${request.request_id} was approved, yet the turn ${
          stopped
            ? `ended "${content.slice(0, 60)}"`
            : `asked again at ${where(later[0] as EventRow)}`
        }`,
      );
    }
    if (request.approved === false && (!stopped || later.length > 0)) {
      findings.add(
        'mismatch',
        'refused extension stops',
        `${where(terminal)}: request ${request.request_id} was refused, yet the turn ran on`,
      );
    }
  }
  return answered;
}
