import { createElevenLabs } from '@ai-sdk/elevenlabs';
import { createOpenAI } from '@ai-sdk/openai';
import type { SpeechModelV3 } from '@ai-sdk/provider';
import { APICallError, experimental_generateSpeech as generateSpeech } from 'ai';
import type { ProviderConfig } from '../config/types.js';
import type { Credentials } from '../providers/credentials.js';
import { boundedFetch, TooLargeError } from './bounded.js';
import { SpeechFailure } from './failure.js';

/** ElevenLabs' API, which its AI SDK provider always calls (it takes no base URL). */
const elevenLabsOrigin = 'https://api.elevenlabs.io';

/**
 * The speech model of an openai or elevenlabs provider, through the AI SDK:
 * OpenAI's `POST {base}/audio/speech` (model, `input`, voice, format), ElevenLabs'
 * `POST /v1/text-to-speech/{voice id}?output_format=…` (`text`, `model_id`, `xi-api-key`).
 * ElevenLabs' SDK provider has no base URL, so a configured `base_url` replaces its origin
 * in the fetch it is given.
 */
function speechModel(
  provider: ProviderConfig,
  credentials: Credentials,
  fetchImpl: typeof fetch,
): SpeechModelV3 {
  if (provider.kind === 'elevenlabs') {
    const base = provider.baseUrl;
    const rebased: typeof fetch = base
      ? (input, init) => {
          const url = input instanceof Request ? input.url : String(input);
          return fetchImpl(
            url.startsWith(elevenLabsOrigin) ? base + url.slice(elevenLabsOrigin.length) : url,
            init,
          );
        }
      : fetchImpl;
    return createElevenLabs({
      apiKey: credentials.apiKey ?? '',
      headers: credentials.headers,
      fetch: rebased,
    }).speech(provider.speechModel);
  }
  return createOpenAI({
    apiKey: credentials.apiKey ?? '',
    headers: credentials.headers,
    fetch: fetchImpl,
    ...(provider.baseUrl ? { baseURL: provider.baseUrl } : {}),
  }).speech(provider.speechModel);
}

/**
 * One synthesis through the AI SDK (`experimental_generateSpeech`). No retries here: a
 * failure is the caller's answer, told without the provider's body.
 */
export async function speakWithSdk(
  provider: ProviderConfig,
  credentials: Credentials,
  options: {
    voiceKey: string;
    text: string;
    format: string;
    maxBytes: number;
    signal: AbortSignal;
    fetch: typeof fetch;
  },
): Promise<{ audio: Uint8Array; mediaType: string }> {
  const model = speechModel(provider, credentials, boundedFetch(options.fetch, options.maxBytes));
  try {
    const result = await generateSpeech({
      model,
      text: options.text,
      voice: options.voiceKey,
      outputFormat: options.format,
      maxRetries: 0,
      abortSignal: options.signal,
    });
    return { audio: result.audio.uint8Array, mediaType: result.audio.mediaType };
  } catch (error) {
    throw sdkFailure(provider.name, error, options.signal, options.maxBytes);
  }
}

function sdkFailure(
  provider: string,
  error: unknown,
  signal: AbortSignal,
  maxBytes: number,
): SpeechFailure {
  if (signal.aborted) return new SpeechFailure(`provider "${provider}" took too long to speak`);
  const cause = (error as { cause?: unknown }).cause;
  if (error instanceof TooLargeError || cause instanceof TooLargeError) {
    return new SpeechFailure(`provider "${provider}" answered more than ${maxBytes} bytes`);
  }
  if (APICallError.isInstance(error) && error.statusCode !== undefined) {
    return new SpeechFailure(`provider "${provider}" answered HTTP ${error.statusCode}`);
  }
  return new SpeechFailure(`provider "${provider}" could not be reached or gave no audio`);
}
