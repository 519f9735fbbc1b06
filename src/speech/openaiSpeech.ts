import { createOpenAI } from '@ai-sdk/openai';
import { APICallError, experimental_generateSpeech as generateSpeech } from 'ai';
import type { ProviderConfig } from '../config/types.js';
import type { Credentials } from '../providers/credentials.js';
import { boundedFetch, TooLargeError } from './bounded.js';
import { SpeechFailure } from './failure.js';

/**
 * OpenAI speech through the AI SDK (`experimental_generateSpeech` with `.speech(model)`):
 * `POST {base}/audio/speech` with the model, the text as `input`, the voice and the
 * format; the answer is the audio. No retries here: a failure is the caller's answer.
 */
export async function speakWithOpenAI(
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
  const openai = createOpenAI({
    apiKey: credentials.apiKey ?? '',
    headers: credentials.headers,
    fetch: boundedFetch(options.fetch, options.maxBytes),
    ...(provider.baseUrl ? { baseURL: provider.baseUrl } : {}),
  });
  try {
    const result = await generateSpeech({
      model: openai.speech(provider.speechModel),
      text: options.text,
      voice: options.voiceKey,
      outputFormat: options.format,
      maxRetries: 0,
      abortSignal: options.signal,
    });
    return { audio: result.audio.uint8Array, mediaType: result.audio.mediaType };
  } catch (error) {
    throw openaiFailure(provider.name, error, options.signal, options.maxBytes);
  }
}

function openaiFailure(
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
