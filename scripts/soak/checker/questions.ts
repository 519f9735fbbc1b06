import type { Ledger } from '../ledger.js';
import { where, type Findings, type Journal } from './findings.js';
import type { EventRow } from './snapshot.js';

/** Slack between the worker's clock (a deadline) and PostgreSQL's (the row's `created_at`). */
const clockSlackMs = 1_000;

/**
 * Questions (`ask_user`, requests of kind `question`), held to what their person was told:
 * - an answer acknowledged with 200 is its call's result: exactly one `tool_result`, a
 *   success carrying `{answer}` as sent (`lost` when it says otherwise, or when its turn
 *   ended `done` without one; `doubled` when there are two);
 * - a question declined with 200 has a result that is not a success (`mismatch`);
 * - an unanswered question ends at its deadline: the deadline is set, and no later than
 *   `questionTimeoutMs` after it was asked (when given); the timer resolved it no earlier
 *   than that; and its result, once there, is the `question_timeout` failure the model is
 *   told (`mismatch`).
 * A question whose turn was cancelled or superseded meanwhile is judged by the other rules.
 */
export function checkQuestions(
  journal: Journal,
  ledger: Ledger,
  findings: Findings,
  questionTimeoutMs: number | null,
): void {
  const results = new Map<string, EventRow[]>();
  for (const event of journal.snapshot.events) {
    if (event.type !== 'tool_result') continue;
    const callId = String(event.payload?.call_id);
    results.set(callId, [...(results.get(callId) ?? []), event]);
  }
  const questions = new Map(
    journal.snapshot.requests
      .filter((request) => request.kind === 'question')
      .map((request) => [request.request_id, request]),
  );

  for (const answer of ledger.answers) {
    const request = questions.get(answer.requestId);
    // Not a question, or not kept: `acknowledged answer kept` names it.
    if (!request || request.state !== 'answered' || request.approved !== answer.approved) continue;
    const found = results.get(request.call_id) ?? [];
    const result = found[0];
    if (found.length > 1) {
      findings.add(
        'doubled',
        "a question's answer is its result once",
        `request ${answer.requestId}: ${found.length} results (${found.map(where).join(', ')})`,
      );
    }
    if (answer.approved && answer.answer !== undefined) {
      const given = result?.payload?.result?.answer;
      if (
        result
          ? result.payload?.ok !== true || given !== answer.answer
          : journal.terminalOf(request.turn_id)?.type === 'done'
      ) {
        findings.add(
          'lost',
          "a question's acknowledged answer is its result",
          `request ${answer.requestId}: answered "${answer.answer}" (200), ${result ? `${where(result)} says ${JSON.stringify(result.payload)}` : `its turn ${request.turn_id} is done without a result`}`,
        );
      }
    }
    if (!answer.approved && result?.payload?.ok === true) {
      findings.add(
        'mismatch',
        'a declined question is no answer',
        `request ${answer.requestId} was declined (200) but ${where(result)} succeeded`,
      );
    }
  }

  for (const request of questions.values()) {
    if (request.state !== 'timeout') continue;
    const problems: string[] = [];
    const asked = time(request.created_at);
    const deadline = time(request.deadline_at);
    const resolved = time(request.answered_at);
    if (deadline === null) problems.push('it has no deadline');
    else {
      if (
        questionTimeoutMs !== null &&
        asked !== null &&
        deadline > asked + questionTimeoutMs + clockSlackMs
      ) {
        problems.push(`its deadline is ${deadline - asked} ms after it was asked`);
      }
      if (resolved === null || resolved < deadline) {
        problems.push(
          `it was resolved ${resolved === null ? 'at no time' : `${deadline - resolved} ms before its deadline`}`,
        );
      }
    }
    const result = results.get(request.call_id)?.[0];
    if (result && result.payload?.error?.code !== 'question_timeout') {
      problems.push(`${where(result)} says ${JSON.stringify(result.payload)}`);
    }
    if (problems.length > 0) {
      findings.add(
        'mismatch',
        'an unanswered question ends at its deadline',
        `request ${request.request_id} (turn ${request.turn_id}) timed out, but ${problems.join('; ')}`,
      );
    }
  }
}

function time(value: Date | string | null | undefined): number | null {
  return value === null || value === undefined ? null : new Date(value).getTime();
}
