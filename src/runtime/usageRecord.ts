import type { Price } from '../config/types.js';
import { costUsd } from '../providers/cost.js';
import type { UsageRecord } from '../store/recordUsage.js';

/** The token counts one provider call reports (a model step's result, or the gate's). */
export interface CallUsage {
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  reasoningTokens: number;
  latencyMs: number;
  ttftMs?: number | null;
}

/** Builds the `usage` row of one call, priced from the pricing table (pure). */
export function usageRecord(
  context: {
    tenant: string;
    sessionId: string;
    turnId: string | null;
    agent: string;
    model: string;
    purpose?: UsageRecord['purpose'];
    outcome?: UsageRecord['outcome'];
  },
  call: CallUsage,
  price: Price | undefined,
): UsageRecord {
  return {
    tenant: context.tenant,
    sessionId: context.sessionId,
    turnId: context.turnId,
    agent: context.agent,
    model: context.model,
    purpose: context.purpose ?? 'reply',
    outcome: context.outcome ?? 'ok',
    inputTokens: call.inputTokens,
    outputTokens: call.outputTokens,
    cachedInputTokens: call.cachedInputTokens,
    reasoningTokens: call.reasoningTokens,
    costUsd: costUsd(price, call),
    latencyMs: call.latencyMs,
    ttftMs: call.ttftMs ?? null,
  };
}
