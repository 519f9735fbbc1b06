/**
 * Budget extensions under chaos. The soak's agent may make `maxToolCalls` tool calls per
 * turn (docs/configuration.md, `budgets`); a `budget` round's turn proposes one more in a
 * single step, so once they ran the turn asks a person for more (`input_required` of kind
 * `budget_extension`). The client answers like any request: approved, the turn resumes
 * with one more budget (enough to finish); refused, it finishes at once with
 * `I stopped here: …`. Nobody answers some: at `extension_timeout_ms` the request ends as
 * refused (state `timeout`), and the turn stops the same way.
 */
export const soakBudgets = {
  max_iterations: 8,
  max_tool_calls: 3,
  on_exhausted: 'ask',
  extension_timeout_ms: 4_000,
} as const;

/** The demo model's reply when a turn finishes for want of budget (src/runtime/turn.ts). */
export const stoppedPrefix = 'I stopped here:';

export function budgetMessage(): string {
  return Array.from({ length: soakBudgets.max_tool_calls + 1 }, () => '/tool clock {}').join('\n');
}

/**
 * A step budget that finishes (CONFIG.md `budgets`, `on_exhausted: finish`), on a second
 * agent, `steps`: one model step per turn. A `steps` turn's model calls `clock` in its
 * first step, the call runs, and the turn is out of steps before the model could quote
 * the result: it ends `done` with `I stopped here: …` at once, never asking a person.
 */
export const stepBudgets = {
  max_iterations: 1,
  max_tool_calls: 16,
  on_exhausted: 'finish',
} as const;

/** The second agent's name (parleyConfig.ts) and what its `steps` turns send. */
export const stepsAgent = 'steps';

export function stepsMessage(turnId: string): string {
  return `${turnId}\n/tool clock {}`;
}

/** The reply of a turn that ran out of its step budget (src/runtime/turn.ts, budget.ts). */
export const stepsStopText = `${stoppedPrefix} the turn used its ${stepBudgets.max_iterations} model steps.`;
