import type { Price } from '../config/types.js';

/**
 * The cost of one call (pure). `inputTokens` is every input token, cached ones included
 * (the AI SDK's `inputTokens.total`); cached ones are priced at `cachedInput` instead.
 */
export function costUsd(
  price: Price | undefined,
  usage: { inputTokens: number; outputTokens: number; cachedInputTokens?: number },
): number {
  if (!price) return 0;
  const cached = Math.min(usage.cachedInputTokens ?? 0, usage.inputTokens);
  const fresh = usage.inputTokens - cached;
  return (
    (fresh * price.input + cached * price.cachedInput + usage.outputTokens * price.output) / 1e6
  );
}
