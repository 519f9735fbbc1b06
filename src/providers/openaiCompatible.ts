import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { LanguageModelV3 } from '@ai-sdk/provider';
import type { ProviderConfig } from '../config/types.js';
import type { Credentials } from './credentials.js';

/**
 * `kind: openai_compatible` (vLLM, llama.cpp server, LM Studio, gateways) and
 * `kind: ollama`, which serves the same Chat Completions protocol under `<base_url>/v1`.
 * `includeUsage` asks the server for token usage in the stream's last chunk.
 */
export function createCompatibleModel(
  provider: ProviderConfig,
  credentials: Credentials,
  modelId: string,
): LanguageModelV3 {
  return createOpenAICompatible({
    name: provider.name,
    baseURL: chatBaseUrl(provider),
    ...(credentials.apiKey ? { apiKey: credentials.apiKey } : {}),
    headers: credentials.headers,
    includeUsage: true,
  }).chatModel(modelId);
}

/** Ollama's base URL is its root (its own API lives beside); the OpenAI protocol is at /v1. */
export function chatBaseUrl(provider: ProviderConfig): string {
  const base = provider.baseUrl ?? '';
  return provider.kind === 'ollama' ? `${base}/v1` : base;
}
