import { createAnthropic } from '@ai-sdk/anthropic';
import type { LanguageModelV3 } from '@ai-sdk/provider';
import type { ProviderConfig } from '../config/types.js';
import type { Credentials } from './credentials.js';

/** `kind: anthropic`: the Messages API (`x-api-key`). */
export function createAnthropicModel(
  provider: ProviderConfig,
  credentials: Credentials,
  modelId: string,
): LanguageModelV3 {
  return createAnthropic({
    apiKey: credentials.apiKey ?? '',
    headers: credentials.headers,
    ...(provider.baseUrl ? { baseURL: provider.baseUrl } : {}),
  })(modelId);
}
