import { createFal } from '@ai-sdk/fal';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { createOpenAI } from '@ai-sdk/openai';
import type { ImageModelV3 } from '@ai-sdk/provider';
import type { Config, ProviderConfig } from '../config/types.js';
import { costUsd } from './cost.js';
import { resolveCredentials, type Env } from './credentials.js';
import { createDemoImageModel } from './demoImage.js';

export type ResolveImageModel = (provider: string, modelId: string) => ImageModelV3;

/**
 * Turns a `provider/model` into an AI SDK image model, created once and reused: the demo
 * draws offline; `openai` (gpt-image-1, dall-e-3…), `google` (Imagen) and `fal` call their
 * APIs with the key read here from the variable the provider names. A provider of another
 * kind has no image models (configuration refuses it before a call gets here).
 */
export function createImageModelRegistry(
  config: Config,
  env: Env = process.env,
): ResolveImageModel {
  const models = new Map<string, ImageModelV3>();
  return (providerName, modelId) => {
    const key = `${providerName}/${modelId}`;
    const cached = models.get(key);
    if (cached) return cached;
    const provider = config.providers[providerName];
    if (!provider) throw new Error(`no provider named "${providerName}"`);
    const model = createImageModel(provider, modelId, env);
    models.set(key, model);
    return model;
  };
}

function createImageModel(provider: ProviderConfig, modelId: string, env: Env): ImageModelV3 {
  if (provider.kind === 'demo') return createDemoImageModel(modelId);
  const credentials = resolveCredentials(provider, env);
  const common = {
    apiKey: credentials.apiKey ?? '',
    headers: credentials.headers,
    ...(provider.baseUrl ? { baseURL: provider.baseUrl } : {}),
  };
  switch (provider.kind) {
    case 'openai':
      return createOpenAI(common).image(modelId);
    case 'google':
      return createGoogleGenerativeAI(common).image(modelId);
    case 'fal':
      return createFal(common).image(modelId);
    default:
      throw new Error(`provider "${provider.name}" (kind ${provider.kind}) makes no images`);
  }
}

/**
 * USD for one image call: the pricing table's `per_image` for each image made, plus the
 * tokens the provider reported at the entry's token prices; 0 without an entry (the demo).
 */
export function priceImages(
  config: Pick<Config, 'pricing'>,
  model: string,
  call: { images: number; inputTokens: number; outputTokens: number },
): number {
  const price = Object.hasOwn(config.pricing, model) ? config.pricing[model] : undefined;
  if (!price) return 0;
  return costUsd(price, call) + (price.perImage ?? 0) * call.images;
}
