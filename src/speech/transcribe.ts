import { createOpenAI } from '@ai-sdk/openai';
import { APICallError, experimental_transcribe as transcribe } from 'ai';
import type { Config } from '../config/types.js';
import { ParleyError } from '../errors.js';
import { resolveCredentials, type Env } from '../providers/credentials.js';

/** What one transcription heard, with what it is billed as (purpose `transcription`). */
export interface Heard {
  text: string;
  /** ISO 639-1, when the model said. */
  language: string | null;
  durationSeconds: number | null;
  /** `<provider>/<model>`, as the usage row names it. */
  model: string;
  costUsd: number;
  latencyMs: number;
}

export type Transcribe = (input: {
  audio: Uint8Array;
  /** A hint, ISO 639-1 (`en`), or null: the model detects it. */
  language: string | null;
}) => Promise<Heard>;

/**
 * Speech input through the AI SDK (`experimental_transcribe` with an openai provider's
 * `.transcription(model)`: `POST {base}/audio/transcriptions`, the audio as a multipart
 * file): `speech.transcription_model`, bounded by `speech.timeout_ms`; null when none is
 * configured. Priced by the model's `pricing.per_minute` over the duration the provider
 * reports. A failure is `speech_failed` without the provider's words (they may echo a key).
 */
export function createTranscriber(
  config: Config,
  io: { env: Env; fetch?: typeof fetch },
): Transcribe | null {
  const chosen = config.speech.transcription;
  if (chosen === null) return null;
  const provider = config.providers[chosen.provider];
  if (!provider) return null;
  const model = `${chosen.provider}/${chosen.modelId}`;
  return async ({ audio, language }) => {
    let credentials;
    try {
      credentials = resolveCredentials(provider, io.env);
    } catch (error) {
      throw new ParleyError('speech_failed', `${model}: ${(error as Error).message}`);
    }
    const openai = createOpenAI({
      apiKey: credentials.apiKey ?? '',
      headers: credentials.headers,
      ...(io.fetch ? { fetch: io.fetch } : {}),
      ...(provider.baseUrl ? { baseURL: provider.baseUrl } : {}),
    });
    const signal = AbortSignal.timeout(config.speech.timeoutMs);
    const started = performance.now();
    try {
      const result = await transcribe({
        model: openai.transcription(chosen.modelId),
        audio,
        ...(language === null ? {} : { providerOptions: { openai: { language } } }),
        maxRetries: 0,
        abortSignal: signal,
      });
      const durationSeconds = result.durationInSeconds ?? null;
      const perMinute = config.pricing[model]?.perMinute ?? 0;
      return {
        text: result.text,
        language: result.language ?? null,
        durationSeconds,
        model,
        costUsd: durationSeconds === null ? 0 : (durationSeconds / 60) * perMinute,
        latencyMs: performance.now() - started,
      };
    } catch (error) {
      if (signal.aborted) throw new ParleyError('speech_failed', `${model} took too long`);
      if (APICallError.isInstance(error) && error.statusCode !== undefined) {
        throw new ParleyError('speech_failed', `${model} answered HTTP ${error.statusCode}`);
      }
      throw new ParleyError('speech_failed', `${model} could not be reached or heard nothing`);
    }
  };
}
