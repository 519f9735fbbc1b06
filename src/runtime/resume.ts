import type { AgentConfig } from '../config/types.js';
import { foldInputs } from '../providers/foldedPrompt.js';
import type { QueuedTurn } from '../store/collectTurns.js';
import { readRequests } from '../store/readRequests.js';
import type { BurstState } from '../store/types.js';
import type { RuntimeDeps } from './deps.js';
import { tookEffect } from './reconciliation.js';

export type Resumed = { kind: 'waiting' } | { kind: 'ready'; burst: BurstState; resumed: boolean };

/**
 * Picks up the burst the session is answering: a fresh one from the queued turns, or the
 * saved one (`saved`, from the session row), with what happened to its requests since.
 * The requests' rows decide (an admission or waitForInput expired them, a person
 * answered, or the deadline passed): answered → the answer applies; timed out → its safe
 * default applies (rejected: the model is told it was not approved in time; approved
 * by the operator's `on_timeout: approve`: it runs; a question: the model is told nobody
 * answered in time; a budget extension: refused); expired by a newer message → the call is
 * superseded (nothing ran) and the newer turns are folded in; still pending → the turn
 * keeps waiting. A `reconciliation` answer says whether a call whose result a crash lost
 * took effect (yes: the model is told it happened, result unknown; no: it runs again, as
 * a fresh call); unanswered (superseded, cancelled), it stays interrupted. An
 * `external_auth` answer that named a credential runs the call again (the tool now finds
 * the reference); a refusal tells the model access was not granted. A `client_tool`
 * answer carries the output of a tool the client ran (`response.output`), or says it did
 * not run it. Nothing is written here: the next save or the commit records it, and a
 * new owner after a crash derives the same from the same rows.
 */
export async function resumeBurst(
  deps: RuntimeDeps,
  agent: AgentConfig | undefined,
  saved: BurstState | null,
  queued: QueuedTurn[],
): Promise<Resumed> {
  const lead = (queued[0] as QueuedTurn).turn_id;
  if (!saved || saved.lead !== lead) {
    const turnIds = queued.map((turn) => turn.turn_id);
    const budget = {
      iterations: agent?.budgets.maxIterations ?? 8,
      tool_calls: agent?.budgets.maxToolCalls ?? 16,
    };
    return {
      kind: 'ready',
      burst: { lead, turn_ids: turnIds, base_turn_ids: turnIds, steps: [], budget },
      resumed: false,
    };
  }
  const burst = saved;
  const awaiting = burst.steps
    .flatMap((step) => step.calls)
    .filter((call) => call.status === 'awaiting');
  const answers = await readRequests(
    deps.db,
    awaiting.map((call) => call.request_id as string),
  );
  let superseded = false;
  for (const call of awaiting) {
    const answer = answers.get(call.request_id as string);
    if (
      call.kind === 'reconciliation' &&
      (answer?.state === 'cancelled' || answer?.state === 'expired')
    ) {
      // Nobody said whether it happened: its result stays unknown.
      call.status = 'failed';
      call.error = {
        code: 'interrupted',
        message: 'the worker running this tool stopped; it may or may not have run',
      };
      superseded ||= answer.state === 'expired';
      continue;
    }
    if (answer?.state === 'cancelled') {
      call.status = 'superseded';
      call.error = { code: 'cancelled', message: 'the turn was cancelled; nothing ran' };
      continue;
    }
    if (answer?.state === 'expired') {
      call.status = 'superseded';
      call.error = { code: 'superseded', message: 'superseded by a new message; nothing ran' };
      superseded = true;
      continue;
    }
    if (answer?.state === 'timeout' && !answer.approved) {
      const deadline = answer.deadline_at
        ? ` (no answer by ${answer.deadline_at.toISOString()})`
        : '';
      if (call.kind === 'client_tool') {
        call.status = 'rejected';
        call.error = {
          code: 'client_tool_timeout',
          message: `the client did not return a result in time${deadline}`,
        };
      } else if (call.kind === 'question') {
        // Nobody answered: the model reads it as the question's result and goes on.
        call.status = 'rejected';
        call.error = {
          code: 'question_timeout',
          message: `nobody answered in time${deadline}`,
        };
      } else if (call.kind === 'budget_extension') {
        // As a refusal: the turn ends as it would have without an extension.
        call.status = 'done';
        call.error = {
          code: 'budget_refused',
          message: `more budget was not granted in time${deadline}`,
        };
        call.reported = true;
      } else {
        // The safe default: nobody approved in time, so nothing ran.
        call.status = 'rejected';
        call.error = {
          code: 'approval_timeout',
          message: `not approved in time${deadline}; nothing ran`,
        };
      }
      continue;
    }
    if (answer?.state !== 'answered' && answer?.state !== 'timeout') continue;
    const reason = typeof answer.response?.reason === 'string' ? `: ${answer.response.reason}` : '';
    if (call.kind === 'reconciliation') {
      if (answer.approved) tookEffect(call, answer.actor?.user ?? 'someone');
      // It did not happen: it runs again, once, as a fresh call.
      else call.status = 'pending';
      continue;
    }
    if (call.kind === 'external_auth') {
      if (answer.approved) {
        call.status = 'pending';
      } else {
        call.status = 'rejected';
        call.error = {
          code: 'authorization_refused',
          message: `access was not granted by ${answer.actor?.user ?? 'someone'}${reason}; nothing ran`,
        };
      }
      continue;
    }
    if (call.kind === 'client_tool') {
      // The client ran it (its output is the result) or says it could not.
      if (answer.approved) {
        call.status = 'done';
        call.result = answer.response?.output ?? null;
      } else {
        call.status = 'failed';
        call.error = {
          code: 'client_tool_failed',
          message: `the client did not run it${reason}`,
        };
      }
      continue;
    }
    if (call.kind === 'budget_extension') {
      call.status = 'done';
      if (answer.approved) {
        burst.budget.iterations += agent?.budgets.maxIterations ?? 8;
        burst.budget.tool_calls += agent?.budgets.maxToolCalls ?? 16;
      } else {
        call.error = {
          code: 'budget_refused',
          message: `more budget was refused by ${answer.actor?.user}`,
        };
      }
      call.reported = true;
    } else if (!answer.approved) {
      call.status = 'rejected';
      call.error = {
        code: 'rejected',
        message: `rejected by ${answer.actor?.user ?? 'someone'}${reason}`,
      };
    } else if (call.kind === 'question') {
      call.status = 'done';
      call.result = { answer: answer.response?.answer ?? null };
    } else {
      call.status = 'approved';
    }
  }
  if (awaiting.some((call) => call.status === 'awaiting')) return { kind: 'waiting' };
  const newer = queued.filter((turn) => !burst.turn_ids.includes(turn.turn_id));
  if (superseded && newer.length > 0) {
    burst.turn_ids.push(...newer.map((turn) => turn.turn_id));
    burst.steps.push({
      kind: 'input',
      text: foldInputs(newer.map((turn) => ({ author: turn.author, content: turn.content }))),
      calls: [],
    });
  }
  return { kind: 'ready', burst, resumed: true };
}
