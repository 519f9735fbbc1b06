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
