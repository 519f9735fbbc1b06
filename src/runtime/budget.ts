import type { AgentConfig } from '../config/types.js';
import { newRequestId } from '../ids.js';
import { spendingCallPrefix } from '../protocol/inbox.js';
import { saveBurst } from '../store/saveBurst.js';
import type { BurstCall, BurstState, Lease } from '../store/types.js';
import { usageEvents, type Usage } from '../store/usageRows.js';
import type { RuntimeDeps } from './deps.js';

/** The request a person answers to grant a turn one more budget. */
const budgetTool = 'budget_extension';

/** Tool calls this burst's model asked for (budget extensions are not theirs). */
function callsOf(burst: BurstState): number {
  return burst.steps.flatMap((step) => step.calls).filter((call) => call.tool !== budgetTool)
    .length;
}

/** How many more tool calls the burst's `max_tool_calls` lets one step ask for (at least 1). */
export function callsLeft(burst: BurstState): number {
  return Math.max(1, burst.budget.tool_calls - callsOf(burst));
}

/**
 * How long the tool calls of the burst's latest model step took, added up: the next model
 * call's usage carries it (`tool_ms`), which is how tool time is billed to wall-time
 * budgets.
 */
export function toolTimeBefore(burst: BurstState): number {
  const last = burst.steps.findLast((step) => step.kind === 'model');
  return (last?.calls ?? []).reduce((sum, call) => sum + (call.duration_ms ?? 0), 0);
}

/** Over `max_iterations` model steps or `max_tool_calls` calls in this burst? */
export function budgetExhausted(burst: BurstState): { reason: string; refused: boolean } | null {
  const steps = burst.steps.filter((step) => step.kind === 'model').length;
  const calls = callsOf(burst);
  const refused = budgetRefused(burst);
  if (steps >= burst.budget.iterations)
    return { reason: `the turn used its ${burst.budget.iterations} model steps`, refused };
  if (calls > burst.budget.tool_calls)
    return { reason: `the turn used its ${burst.budget.tool_calls} tool calls`, refused };
  return null;
}

/** Did a person refuse this burst more budget? */
export function budgetRefused(burst: BurstState): boolean {
  return burst.steps
    .flatMap((step) => step.calls)
    .some((call) => call.tool === budgetTool && call.error?.code === 'budget_refused');
}

/**
 * `on_exhausted: ask`: a `budget_extension` request; approval grants one more budget (and
 * lets a model call a spending budget stopped try again). With the agent's
 * `budgets.extension_timeout_ms` it has a deadline, past which it counts as refused.
 * Provider calls not billed yet (`usage`) are billed with it.
 */
export async function askForBudget(
  deps: RuntimeDeps,
  lease: Lease,
  agent: AgentConfig,
  burst: BurstState,
  reason: string,
  usage: Usage[] = [],
  /** `spend`: a spending budget stopped a model call (its request's call id says so). */
  budget: 'turn' | 'spend' = 'turn',
): Promise<void> {
  const call: BurstCall = {
    call_id: `${budget === 'spend' ? spendingCallPrefix : 'budget_'}${burst.steps.length}`,
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
    events: usageEvents(burst.lead, usage),
    requests: [
      {
        request_id: call.request_id as string,
        call_id: call.call_id,
        kind: 'budget_extension',
        tool: null,
        arguments: null,
        prompt: `${reason}. Allow it to continue?`,
        deadline_at:
          agent.budgets.extensionTimeoutMs === null
            ? null
            : new Date(Date.now() + agent.budgets.extensionTimeoutMs).toISOString(),
        on_timeout: 'reject',
        arguments_digest: null,
        human_only: false,
        nudges: [],
      },
    ],
    usage,
  });
}
