import type { LanguageModelV3Prompt } from '@ai-sdk/provider';
import type { Config } from '../config/types.js';
import { countUsage } from '../metrics.js';
import { costUsd } from '../providers/cost.js';
import type { Usage } from '../store/usageRows.js';
import type { StepResult } from './modelStep.js';
import { estimate } from './prompt.js';

/** The usage of a call that completed: the provider's own counts, priced. */
export function usageOf(
  config: Config,
  model: string,
  result: Pick<
    StepResult,
    'inputTokens' | 'outputTokens' | 'cachedInputTokens' | 'reasoningTokens' | 'latencyMs'
  > & { ttftMs?: number | null },
  purpose: Usage['purpose'] = 'reply',
): Usage {
  return {
    input_tokens: result.inputTokens,
    output_tokens: result.outputTokens,
    cached_input_tokens: result.cachedInputTokens,
    reasoning_tokens: result.reasoningTokens,
    cost_usd: costUsd(Object.hasOwn(config.pricing, model) ? config.pricing[model] : undefined, {
      inputTokens: result.inputTokens,
      outputTokens: result.outputTokens,
      cachedInputTokens: result.cachedInputTokens,
    }),
    model,
    latency_ms: result.latencyMs,
    ttft_ms: result.ttftMs ?? null,
    purpose,
    outcome: 'ok',
  };
}

/**
 * The usage of a call that broke off (a failure that will be retried, a cancel): the
 * provider may have spent tokens without reporting them, so they are estimated from the
 * prompt and what was streamed (about four characters a token), and billed all the same.
 */
export function estimatedUsage(
  config: Config,
  model: string,
  call: { prompt: LanguageModelV3Prompt; streamedChars: number; latencyMs: number },
  outcome: 'failed' | 'cancelled',
): Usage {
  const inputTokens = estimate(call.prompt);
  const outputTokens = Math.ceil(call.streamedChars / 4);
  return {
    ...usageOf(config, model, {
      inputTokens,
      outputTokens,
      cachedInputTokens: 0,
      reasoningTokens: 0,
      latencyMs: call.latencyMs,
    }),
    outcome,
  };
}

/** Prometheus counters, once the usage is committed. */
export function countBilled(tenant: string, agent: string, usage: Usage[]): void {
  for (const call of usage) {
    countUsage({
      tenant,
      agent,
      model: call.model,
      inputTokens: call.input_tokens,
      outputTokens: call.output_tokens,
      cachedInputTokens: call.cached_input_tokens,
      reasoningTokens: call.reasoning_tokens,
      costUsd: call.cost_usd,
    });
  }
}
