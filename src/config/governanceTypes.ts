/** Compiled `tenancy.agent_policy` and `budgets` (docs/governance.md). */

/**
 * `tenancy.agent_policy`: the tools a tenant's definition may list (MCP tools are granted
 * per server instead) and the ceilings of its numbers.
 */
export interface AgentPolicy {
  tools: string[];
  maxTimeoutMs: number;
  maxBytes: number;
  maxOutputBytes: number;
  maxRedirects: number;
  maxIterations: number;
  maxToolCalls: number;
  maxOutputTokens: number;
  maxMissionIterations: number;
  maxMissionTimeoutSeconds: number;
  maxLoopDelaySeconds: number;
}

/** A spending budget of the file's `budgets` (docs/governance.md). */
export interface BudgetConfig {
  tenant: string;
  budgetId: string;
  scope: 'tenant' | 'user' | 'agent' | 'session' | 'execution';
  scopeId: string | null;
  metric: 'cost_usd' | 'tokens' | 'tool_calls' | 'wall_ms';
  period: 'day' | 'month' | 'run';
  limit: number;
}
