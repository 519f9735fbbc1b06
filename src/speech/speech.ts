import { spawn as nodeSpawn } from 'node:child_process';
import type { Config, ProviderKind, VoiceConfig } from '../config/types.js';
import { speechProviderOf } from '../config/voices.js';
import { ParleyError } from '../errors.js';
import { resolveCredentials, type Env } from '../providers/credentials.js';
import { speakWithEspeak, type Spawn } from './espeak.js';
import { SpeechFailure } from './failure.js';
import { speakWithSdk } from './sdkSpeech.js';
import { speakWithPiper } from './piper.js';
import { createTranscriber, type Transcribe } from './transcribe.js';

/** Audio formats a request may ask for (each provider kind speaks some: `spokenFormats`). */
export const speechFormats = ['wav', 'mp3', 'opus', 'aac', 'flac'] as const;
export type SpeechFormat = (typeof speechFormats)[number];

/** What each speaking kind answers in, its default first. */
const spokenFormats: Partial<Record<ProviderKind, readonly SpeechFormat[]>> = {
  espeak: ['wav'],
  piper: ['wav'],
  openai: ['mp3', 'wav', 'opus', 'aac', 'flac'],
  elevenlabs: ['mp3'],
};

const mediaTypes: Record<SpeechFormat, string> = {
  wav: 'audio/wav',
  mp3: 'audio/mpeg',
  opus: 'audio/ogg',
  aac: 'audio/aac',
  flac: 'audio/flac',
};

/** One synthesis, with what it is billed as (a `usage` row of purpose `speech`). */
export interface Spoken {
  audio: Uint8Array;
  mediaType: string;
  /** What the usage row names: `<provider>/<speech model>` for openai and elevenlabs, else the voice id. */
  model: string;
  /** Characters of text spoken (code points). */
  characters: number;
  costUsd: number;
  latencyMs: number;
}

export interface Speech {
  /** The catalog (GET /api/v1/voices). */
  readonly voices: readonly VoiceConfig[];
  voice(id: string): VoiceConfig | null;
  /**
   * Speaks `text` in `voice`, in `format` (null: the provider's own, wav for espeak and
   * piper, mp3 for openai and elevenlabs). Fails with ParleyError: `invalid_request` (a format the voice
   * does not speak), `speech_failed` (the provider's failure, without secrets).
   */
  speak(voice: VoiceConfig, text: string, format: SpeechFormat | null): Promise<Spoken>;
  /** Speech input (`speech.transcription_model`, transcribe.ts); null: none configured. */
  readonly transcribe: Transcribe | null;
}

export interface SpeechIo {
  env: Env;
  spawn?: Spawn;
  fetch?: typeof fetch;
  /** The espeak-ng executable (default `espeak-ng`, found on PATH). */
  espeakCommand?: string;
}

/** Code points, as the text limit and the usage row count them. */
export function characterCount(text: string): number {
  let count = 0;
  for (const _ of text) count += 1;
  return count;
}

/**
 * The speech service of one process: the voice catalog and the three ways to speak
 * (espeak.ts, piper.ts, sdkSpeech.ts for openai and elevenlabs), each bounded by `speech.timeout_ms` and
 * `speech.max_audio_bytes`. Keys are read from the environment per call, never logged.
 */
export function createSpeech(config: Config, io: SpeechIo): Speech {
  const byId = new Map(config.voices.map((voice) => [voice.id, voice]));
  const spawn = io.spawn ?? nodeSpawn;
  const fetchImpl = io.fetch ?? fetch;
  const { timeoutMs, maxAudioBytes } = config.speech;
  return {
    voices: config.voices,
    voice: (id) => byId.get(id) ?? null,
    transcribe: createTranscriber(config, { env: io.env, fetch: fetchImpl }),
    async speak(voice, text, format) {
      const provider = speechProviderOf(config.providers, voice.provider);
      if (!provider) throw new ParleyError('voice_not_found', `no voice "${voice.id}"`);
      const formats = spokenFormats[provider.kind] ?? ['wav'];
      if (format !== null && !formats.includes(format)) {
        throw new ParleyError(
          'invalid_request',
          `format: the voice ${voice.id} speaks ${formats.join(', ')}`,
          { field: 'format' },
        );
      }
      const signal = AbortSignal.timeout(timeoutMs);
      const started = performance.now();
      let audio: Uint8Array;
      let mediaType = mediaTypes.wav;
      let model = voice.id;
      try {
        if (provider.kind === 'espeak') {
          audio = await speakWithEspeak(spawn, {
            command: io.espeakCommand ?? 'espeak-ng',
            voiceKey: voice.key,
            text,
            maxBytes: maxAudioBytes,
            signal,
          });
        } else {
          let credentials;
          try {
            credentials = resolveCredentials(provider, io.env);
          } catch (error) {
            throw new SpeechFailure((error as Error).message);
          }
          if (provider.kind === 'piper') {
            audio = await speakWithPiper(provider, credentials, {
              voiceKey: voice.key,
              text,
              maxBytes: maxAudioBytes,
              signal,
              fetch: fetchImpl,
            });
          } else {
            const chosen = format ?? formats[0] ?? 'mp3';
            const spoken = await speakWithSdk(provider, credentials, {
              voiceKey: voice.key,
              text,
              format: chosen,
              maxBytes: maxAudioBytes,
              signal,
              fetch: fetchImpl,
            });
            audio = spoken.audio;
            mediaType = mediaTypes[chosen];
            model = `${provider.name}/${provider.speechModel}`;
          }
        }
      } catch (error) {
        if (error instanceof SpeechFailure) {
          throw new ParleyError('speech_failed', `voice ${voice.id}: ${error.message}`);
        }
        throw error;
      }
      const characters = characterCount(text);
      // `pricing` of the model, its `input` read as USD per million characters; espeak is free.
      const price = provider.kind === 'espeak' ? undefined : config.pricing[model];
      return {
        audio,
        mediaType,
        model,
        characters,
        costUsd: price ? (characters * price.input) / 1_000_000 : 0,
        latencyMs: performance.now() - started,
      };
    },
  };
}
