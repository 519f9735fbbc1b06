import { z } from 'zod';
import { callTimeoutMs } from './schemaUnits.js';

// The configuration file's voices and speech settings (CONFIG.md); types in speechTypes.ts.

/** A voice id: `<provider>/<key>` (the key may hold further slashes, not spaces). */
export const voiceId = z
  .string()
  .max(200)
  .regex(/^[A-Za-z0-9_-]+\/[^\s/][^\s]*$/, 'must be <provider>/<key>');

/**
 * One voice of the catalog (GET /api/v1/voices): a provider's key (espeak-ng's `-v` voice,
 * a Piper model name, an OpenAI voice) with what people see of it. Operator configuration
 * only: a tenant's agent may name a voice, never define one.
 */
export const voiceSchema = z
  .object({
    id: voiceId.optional(),
    name: z.string().min(1).max(200).optional(),
    provider: z.string().regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, _ and -'),
    key: z
      .string()
      .min(1)
      .max(160)
      .regex(/^[A-Za-z0-9][A-Za-z0-9_.:+\/-]*$/, 'letters, digits and _ . : + / -'),
    language: z.string().max(35).default(''),
    locale: z.string().max(35).default(''),
    gender: z.string().max(32).default(''),
    quality: z.string().max(32).default(''),
  })
  .strict();

export const speechSchema = z
  .object({
    default_voice: voiceId.default('espeak/en'),
    // Keep a message's speech once made (GET .../messages/{id}/speech answers from it).
    cache: z.boolean().default(true),
    // The longest text spoken at once, in characters.
    max_characters: z.number().int().positive().max(100_000).default(4000),
    // How long one synthesis may take, and the most audio it may return.
    timeout_ms: callTimeoutMs.default(60_000),
    max_audio_bytes: z
      .number()
      .int()
      .positive()
      .max(256 * 1024 * 1024)
      .default(32 * 1024 * 1024),
    // Speech input (POST /api/v1/transcriptions): `<provider>/<model>` of an openai
    // provider (whisper-1, gpt-4o-mini-transcribe); null: none, the web app shows no
    // microphone. The most audio one request may send (OpenAI takes up to 25 MB).
    transcription_model: z
      .string()
      .regex(/^[A-Za-z0-9_-]+\/\S+$/, 'must be <provider>/<model>')
      .max(200)
      .nullable()
      .default(null),
    max_transcription_bytes: z
      .number()
      .int()
      .positive()
      .max(256 * 1024 * 1024)
      .default(25 * 1024 * 1024),
  })
  .strict()
  .prefault({});
