import type { AgentConfig } from '../config/types.js';
import { newRequestId } from '../ids.js';
import { newEvent, type NewEvent } from '../protocol/events.js';
import type { QueuedTurn } from '../store/collectTurns.js';
import type { Usage } from '../store/commitTurn.js';
import { readRequests } from '../store/readRequests.js';
import { saveBurst, type NewInputRequest } from '../store/saveBurst.js';
import type { BurstCall, BurstState, Lease } from '../store/types.js';
import { foldInputs } from '../providers/foldedPrompt.js';
import type { RuntimeDeps } from './deps.js';
import type { StepResult } from './modelStep.js';
import { askUserTool, policyOf } from './steps.js';
import { wellFormed, wellFormedJson } from './text.js';

const budgetTool = 'budget_extension';

type Resumed = { kind: 'waiting' } | { kind: 'ready'; burst: BurstState; resumed: boolean };

/**
 * Picks up the burst the session is answering: a fresh one from the queued turns, or the
 * saved one (`saved`, from the session row), with what happened to its requests since.
 * The requests' rows decide (an admission or waitForInput expired them, or a person
 * answered): answered → the answer applies; expired by a newer message → the call is
 * superseded (nothing ran) and the newer turns are folded in; still pending → the turn
 * keeps waiting. Nothing is written here: the next save or the commit records it, and a
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
    if (answer?.state === 'expired') {
      call.status = 'superseded';
      call.error = { code: 'superseded', message: 'superseded by a new message; nothing ran' };
      superseded = true;
      continue;
    }
    if (answer?.state !== 'answered') continue;
    const reason = typeof answer.response?.reason === 'string' ? `: ${answer.response.reason}` : '';
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

/**
 * Records a model step that proposed tool calls: `tool_call` events, and per the agent's
 * policy a request for each call that needs a person (`input_required`), or `denied`.
 */
export async function recordCalls(
  deps: RuntimeDeps,
  lease: Lease,
  agent: AgentConfig,
  burst: BurstState,
  result: StepResult,
  usage: Usage[],
  tail: NewEvent[],
): Promise<void> {
  const requests: NewInputRequest[] = [];
  const calls: BurstCall[] = result.calls.map((proposed) => {
    const policy = policyOf(agent, deps.tools, proposed.tool);
    const call: BurstCall = {
      ...proposed,
      arguments: wellFormedJson(proposed.arguments),
      policy,
      status: 'pending',
    };
    if (policy === 'deny') {
      call.status = 'denied';
      call.error = {
        code: 'denied',
        message: `the tool ${proposed.tool} is not allowed here; nothing ran`,
      };
    } else if (proposed.tool === askUserTool || policy === 'approve') {
      const question = proposed.tool === askUserTool;
      call.status = 'awaiting';
      call.kind = question ? 'question' : 'approval';
      call.request_id = newRequestId();
      const asked = (call.arguments as { question?: unknown } | null)?.question;
      requests.push({
        request_id: call.request_id,
        call_id: call.call_id,
        kind: call.kind,
        tool: question ? null : proposed.tool,
        arguments: call.arguments,
        prompt: question && typeof asked === 'string' ? asked : null,
      });
    }
    return call;
  });
  burst.steps.push({ kind: 'model', text: wellFormed(result.text), calls });
  await saveBurst(deps.db, lease, burst, {
    events: [
      ...tail,
      ...usage.map((call) => newEvent('usage', burst.lead, { ...call })),
      ...calls.map((call) =>
        newEvent('tool_call', burst.lead, {
          call_id: call.call_id,
          tool: call.tool,
          arguments: call.arguments,
        }),
      ),
    ],
    requests,
    usage,
    partialOutput: tail.length > 0,
  });
}

/** Over `max_iterations` model steps or `max_tool_calls` calls in this burst? */
export function budgetExhausted(burst: BurstState): { reason: string; refused: boolean } | null {
  const steps = burst.steps.filter((step) => step.kind === 'model').length;
  const calls = burst.steps
    .flatMap((step) => step.calls)
    .filter((call) => call.tool !== budgetTool).length;
  const refused = burst.steps
    .flatMap((step) => step.calls)
    .some((call) => call.tool === budgetTool && call.error?.code === 'budget_refused');
  if (steps >= burst.budget.iterations)
    return { reason: `the turn used its ${burst.budget.iterations} model steps`, refused };
  if (calls > burst.budget.tool_calls)
    return { reason: `the turn used its ${burst.budget.tool_calls} tool calls`, refused };
  return null;
}

/** `on_exhausted: ask`: a `budget_extension` request; approval grants one more budget. */
export async function askForBudget(
  deps: RuntimeDeps,
  lease: Lease,
  burst: BurstState,
  reason: string,
): Promise<void> {
  const call: BurstCall = {
    call_id: `budget_${burst.steps.length}`,
    tool: budgetTool,
    arguments: {},
    policy: 'approve',
    status: 'awaiting',
    kind: 'budget_extension',
    request_id: newRequestId(),
    reported: true,
  };
  burst.steps.push({ kind: 'input', text: '', calls: [call] });
  await saveBurst(deps.db, lease, burst, {
    requests: [
      {
        request_id: call.request_id as string,
        call_id: call.call_id,
        kind: 'budget_extension',
        tool: null,
        arguments: null,
        prompt: `${reason}. Allow it to continue?`,
      },
    ],
  });
}
