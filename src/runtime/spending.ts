import type { LanguageModelV3Prompt } from '@ai-sdk/provider';
import type { AgentConfig } from '../config/types.js';
import { budgetBreaches } from '../metrics.js';
import { costUsd } from '../providers/cost.js';
import type { BurstState, Lease } from '../store/types.js';
import { reserveBudget, type Breach } from '../store/reserveBudget.js';
import { modelInfoOf } from './basePrompt.js';
import type { RuntimeDeps } from './deps.js';
import { callsLeft } from './budget.js';
import { estimate } from './prompt.js';

/** The output a call may write when neither the agent nor the model catalog says. */
export const fallbackMaxOutputTokens = 4096;

/**
 * A model call's worst case (docs/governance.md): the prompt's tokens as estimated (about
 * four characters a token, a fixed amount per image; tool definitions not counted) plus
 * the most output it may write (the agent's `max_output_tokens`, else the catalog's
 * figure for the model, else 4096), priced from the pricing table (an unpriced model
 * costs 0).
 */
export function worstCase(
  deps: RuntimeDeps,
  agent: AgentConfig,
  prompt: LanguageModelV3Prompt,
): { tokens: number; costUsd: number } {
  const output =
    agent.maxOutputTokens ?? modelInfoOf(deps, agent).maxOutputTokens ?? fallbackMaxOutputTokens;
  const input = estimate(prompt);
  const model = `${agent.model.provider}/${agent.model.modelId}`;
  const price = Object.hasOwn(deps.config.pricing, model) ? deps.config.pricing[model] : undefined;
  return {
    tokens: input + output,
    costUsd: costUsd(price, { inputTokens: input, outputTokens: output }),
  };
}

/**
 * Reserves the next model step's worst case against the spending budgets that apply
 * (store/reserveBudget.ts). The step is the call's identity: lead turn, attempt and step
 * number, so a re-run of the same step replaces its reservation rather than adding one,
 * and the step's retries share it. Its tool calls' worst case is what is left of the
 * turn's `max_tool_calls` (none when it is offered no tools). Returns the budgets it would
 * take past their limit (nothing reserved then; empty when the call may go) and how many
 * of the step's tool calls may run.
 */
export async function reserveStep(
  deps: RuntimeDeps,
  lease: Lease,
  agent: AgentConfig,
  burst: BurstState,
  step: { prompt: LanguageModelV3Prompt; attempt: number; offersTools: boolean },
): Promise<{ breaches: Breach[]; toolCalls: number }> {
  const worst = worstCase(deps, agent, step.prompt);
  const { breaches, toolCalls } = await reserveBudget(deps.db, lease, {
    callKey: `${burst.lead}:${step.attempt}:${burst.steps.length}`,
    turnId: burst.lead,
    agent: agent.name,
    tokens: worst.tokens,
    costUsd: worst.costUsd,
    toolCalls: step.offersTools ? callsLeft(burst) : 0,
  });
  for (const breach of breaches) {
    budgetBreaches.inc({
      tenant: lease.tenant,
      scope: breach.scope,
      metric: breach.metric,
      period: breach.period,
    });
  }
  return { breaches, toolCalls };
}

const units: Record<Breach['metric'], string> = {
  cost_usd: ' USD',
  tokens: ' tokens',
  tool_calls: ' tool calls',
  wall_ms: ' ms',
};

/** Why the step may not run, for the `budget_extension` prompt and the `error` event. */
export function breachReason(breaches: Breach[]): string {
  const breach = breaches[0] as Breach;
  const unit = units[breach.metric];
  const figure = (value: number) =>
    breach.metric === 'cost_usd' ? value.toFixed(6) : String(Math.round(value));
  const per = breach.period === 'run' ? 'per turn' : `per ${breach.period}`;
  const scope = breach.scope === 'tenant' ? 'tenant' : `${breach.scope} ${breach.scope_id}`;
  return (
    `the next model call would exceed the budget "${breach.budget_id}" ` +
    `(${scope}, ${breach.metric} ${per}, limit ${figure(breach.limit)}${unit}): ` +
    `used ${figure(breach.used ?? 0)}, reserved ${figure(breach.reserved)}, ` +
    `this call up to ${figure(breach.amount)}`
  );
}
