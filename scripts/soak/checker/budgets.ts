import { stepsStopText, stoppedPrefix } from '../budgets.js';
import type { Ledger } from '../ledger.js';
import { turnIdsOf, where, type Findings, type Journal } from './findings.js';
import type { EventRow } from './snapshot.js';

/**
 * The budget a request or a stop names (`the turn used its 6 tool calls`): its size and
 * what it counts; null when the text names none.
 */
export function namedBudget(text: string): { size: number; of: string } | null {
  const found = /used its (\d+) (tool calls|model steps)/.exec(text);
  return found ? { size: Number(found[1]), of: found[2] as string } : null;
}

/**
 * Budget extensions (kind `budget_extension`), held to what their answer said:
 * - an approved extension resumes its turn with a larger budget: the turn does not
 *   finish `I stopped here`, nor ask again, at the budget it was just given beyond — a
 *   later stop or request names a larger budget of the same kind, else the grant was lost.
 *   (One burst may need several grants: messages that arrived together are answered
 *   together, and their calls add up.)
 * - a refused one (or one nobody answered before its deadline: `timeout`, refused)
 *   finishes its turn at once with `I stopped here`, and the turn never asks again (a
 *   refused turn that ran on used a budget nobody gave).
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
    if (request.kind !== 'budget_extension') continue;
    if (request.state !== 'answered' && request.state !== 'timeout') continue;
    if (request.state === 'answered') answered += 1;
    const terminal = journal.terminalOf(request.turn_id);
    if (!terminal || terminal.type !== 'done') continue;
    const asked = requestEvents.get(request.request_id);
    const later = (askedByTurn.get(request.turn_id) ?? []).filter(
      (event) => asked !== undefined && event.sequence > asked.sequence,
    );
    const content = String(terminal.payload?.final_message?.content ?? '');
    const stopped = content.startsWith(stoppedPrefix);
    const granted = namedBudget(String(asked?.payload?.prompt ?? ''));
    // The grant took effect when what came after names a larger budget of its kind (or
    // the other kind's: a grant raises both, and the turn went on to meet that one).
    const beyond = (text: string) => {
      const named = namedBudget(text);
      if (granted === null || named === null) return false;
      return named.of !== granted.of || named.size > granted.size;
    };
    const lostGrant =
      (stopped && !beyond(content)) ||
      (later.length > 0 && !beyond(String(later[0]?.payload?.prompt ?? '')));
    if (request.approved && lostGrant) {
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

/**
 * Step budgets that finish (`on_exhausted: finish`, the `steps` agent): a `steps` turn's
 * first model step calls `clock`, and the turn is then out of steps. It ends as the spec
 * says, once: `done` with `I stopped here: the turn used its 1 model steps.` (a turn that
 * quoted the clock took a step it did not have), its call proposed and run exactly once,
 * and no person asked for more (`finish` never asks). A turn cancelled or failed
 * meanwhile is judged by the other rules; its single end by the journal's.
 */
export function checkStepBudgets(journal: Journal, ledger: Ledger, findings: Findings): number {
  let stopped = 0;
  for (const turn of ledger.turns.values()) {
    if (turn.kind !== 'steps') continue;
    const terminal = journal.terminalOf(turn.turnId);
    if (!terminal || terminal.type !== 'done') continue;
    // Its burst's events carry the burst's lead turn: the done names it.
    const burst = new Set(turnIdsOf(terminal));
    const events = (journal.eventsBySession.get(turn.sessionId) ?? []).filter((event) =>
      burst.has(String(event.turn_id)),
    );
    const content = String(terminal.payload?.final_message?.content ?? '');
    const calls = events.filter((event) => event.type === 'tool_call');
    const results = events.filter((event) => event.type === 'tool_result');
    const asked = events.filter((event) => event.type === 'input_required');
    // One `clock` call per `steps` turn the burst answers (a plain turn folded in has none).
    const wanted = turnIdsOf(terminal).filter(
      (turnId) => ledger.turns.get(turnId)?.kind === 'steps',
    ).length;
    const problems = [
      ...(content === stepsStopText ? [] : [`it ended "${content.slice(0, 80)}"`]),
      ...(calls.length === wanted && results.length === wanted
        ? []
        : [`${calls.length} calls and ${results.length} results for ${wanted} turn(s)`]),
      ...(asked.length === 0 ? [] : [`it asked ${asked.length} time(s) for more`]),
    ];
    if (problems.length === 0) {
      stopped += 1;
      continue;
    }
    findings.add(
      'mismatch',
      'a turn out of steps finishes once',
      `${where(terminal)}: ${turn.turnId} ran out of steps, but ${problems.join('; ')}`,
    );
  }
  return stopped;
}
