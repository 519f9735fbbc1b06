import type { LanguageModelV3 } from '@ai-sdk/provider';
import type { Config, ProviderConfig } from '../config/types.js';
import { createAnthropicModel } from './anthropic.js';
import { Circuit, withCircuit, type CircuitChange } from './circuit.js';
import { costUsd } from './cost.js';
import { resolveCredentials, type Env } from './credentials.js';
import { withStreamDeadlines } from './deadlines.js';
import { createDemoModel } from './demo.js';
import { createGoogleModel } from './google.js';
import { createOpenAIModel } from './openai.js';
import { createCompatibleModel } from './openaiCompatible.js';

export type ResolveModel = (provider: string, modelId: string) => LanguageModelV3;

/**
 * Turns an agent's `provider/model` into an AI SDK language model. The runtime only ever
 * sees LanguageModelV3, so a provider kind is a case here, never a runtime change.
 * Every model's streaming calls carry the provider's first-token and idle deadlines
 * (deadlines.ts) and go through the provider's circuit (circuit.ts: one per provider in
 * this process; `onCircuitChange` hears every change of state). Models are created once
 * per (provider, model) and reused. Keys are read from the environment here, at creation,
 * and live only inside the SDK client.
 */
export function createModelRegistry(
  config: Config,
  env: Env = process.env,
  onCircuitChange: (change: CircuitChange) => void = () => {},
): ResolveModel {
  const models = new Map<string, LanguageModelV3>();
  const circuits = new Map<string, Circuit>();
  const circuitOf = (provider: ProviderConfig) => {
    let circuit = circuits.get(provider.name);
    if (!circuit) {
      circuit = new Circuit(provider.name, provider.circuit, onCircuitChange);
      circuits.set(provider.name, circuit);
    }
    return circuit;
  };
  return (providerName, modelId) => {
    const key = `${providerName}/${modelId}`;
    const cached = models.get(key);
    if (cached) return cached;
    const provider = config.providers[providerName];
    if (!provider) throw new Error(`no provider named "${providerName}"`);
    const streaming = withStreamDeadlines(createModel(config, provider, modelId, env), provider);
    const model =
      provider.circuit.failures > 0 ? withCircuit(streaming, circuitOf(provider)) : streaming;
    models.set(key, model);
    return model;
  };
}

function createModel(
  config: Config,
  provider: ProviderConfig,
  modelId: string,
  env: Env,
): LanguageModelV3 {
  if (provider.kind === 'demo') return createDemoModel({ modelId, delayMs: config.demo.delayMs });
  const credentials = resolveCredentials(provider, env);
  switch (provider.kind) {
    case 'openai':
      return createOpenAIModel(provider, credentials, modelId);
    case 'anthropic':
      return createAnthropicModel(provider, credentials, modelId);
    case 'google':
      return createGoogleModel(provider, credentials, modelId);
    case 'openai_compatible':
    case 'ollama':
      return createCompatibleModel(provider, credentials, modelId);
    case 'fal':
      throw new Error(`provider "${provider.name}" (kind fal) makes images only, no replies`);
    case 'espeak':
    case 'piper':
    case 'elevenlabs':
      // Refused when the configuration compiles (agents.ts); speech is src/speech/.
      throw new Error(
        `provider "${provider.name}" (kind ${provider.kind}) only speaks, no replies`,
      );
  }
}

/** USD for one call, from the pricing table (per million tokens); unpriced models cost 0. */
export function priceUsage(
  config: Config,
  model: string,
  usage: { inputTokens: number; outputTokens: number; cachedInputTokens?: number },
): number {
  return costUsd(config.pricing[model], usage);
}
