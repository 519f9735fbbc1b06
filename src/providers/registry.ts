import type { LanguageModelV3 } from '@ai-sdk/provider';
import type { Config } from '../config/types.js';
import { createDemoModel } from './demo.js';

/**
 * Turns an agent's `provider/model` into an AI SDK language model. The runtime only ever
 * sees LanguageModelV3, so adding a real provider is a case here, not a runtime change.
 * Models are created once per (provider, model) and reused.
 */
export function createModelRegistry(
  config: Config,
): (provider: string, modelId: string) => LanguageModelV3 {
  const models = new Map<string, LanguageModelV3>();
  return (providerName, modelId) => {
    const key = `${providerName}/${modelId}`;
    const cached = models.get(key);
    if (cached) return cached;
    const provider = config.providers[providerName];
    if (!provider) throw new Error(`no provider named "${providerName}"`);
    let model: LanguageModelV3;
    switch (provider.kind) {
      case 'demo':
        model = createDemoModel({ modelId, delayMs: config.demo.delayMs });
        break;
      default:
        throw new Error(`provider kind "${provider.kind}" is not available in this release`);
    }
    models.set(key, model);
    return model;
  };
}

/** USD for one call, from the pricing table (per million tokens); unpriced models cost 0. */
export function priceUsage(
  config: Config,
  model: string,
  usage: { inputTokens: number; outputTokens: number },
): number {
  const price = config.pricing[model];
  if (!price) return 0;
  return (usage.inputTokens * price.input + usage.outputTokens * price.output) / 1_000_000;
}
