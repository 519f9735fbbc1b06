import { createOpenAI } from '@ai-sdk/openai';
import type { LanguageModelV3 } from '@ai-sdk/provider';
import type { ProviderConfig } from '../config/types.js';
import type { Credentials } from './credentials.js';

/** `kind: openai`: the Responses API by default, Chat Completions with `api: chat`. */
export function createOpenAIModel(
  provider: ProviderConfig,
  credentials: Credentials,
  modelId: string,
): LanguageModelV3 {
  const openai = createOpenAI({
    apiKey: credentials.apiKey ?? '',
    headers: credentials.headers,
    ...(provider.baseUrl ? { baseURL: provider.baseUrl } : {}),
  });
  return provider.api === 'chat' ? openai.chat(modelId) : openai.responses(modelId);
}
