import { createGoogleGenerativeAI } from '@ai-sdk/google';
import type { LanguageModelV3 } from '@ai-sdk/provider';
import type { ProviderConfig } from '../config/types.js';
import type { Credentials } from './credentials.js';

/** `kind: google`: Gemini through the Generative Language API (`streamGenerateContent`). */
export function createGoogleModel(
  provider: ProviderConfig,
  credentials: Credentials,
  modelId: string,
): LanguageModelV3 {
  return createGoogleGenerativeAI({
    apiKey: credentials.apiKey ?? '',
    headers: credentials.headers,
    ...(provider.baseUrl ? { baseURL: provider.baseUrl } : {}),
  })(modelId);
}
