import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ParleyError } from '../errors.js';
import { voice } from '../protocol/rest.js';
import { characterCount, speechFormats, type Speech, type Spoken } from '../speech/speech.js';
import { findSessionMessage, readSpeech, recordSpeechUsage, saveSpeech } from '../store/speech.js';
import type { VoiceConfig } from '../config/types.js';
import { audioBytesMatch, audioTypes, isAudioType, type AudioType } from '../media/audioTypes.js';
import type { Transcribe } from '../speech/transcribe.js';
import { declaredMediaType, rawBodies, route, routeOptions, typed } from './contract.js';
import { agentsOf, speechOf, type ApiDeps } from './deps.js';
import { pathId, text } from './validate.js';

const binary = { type: 'string', format: 'binary' };
const audio = {
  description:
    'The audio: audio/wav (espeak, piper), audio/mpeg (elevenlabs), else of the format asked (openai)',
  content: {
    'audio/wav': { schema: binary },
    'audio/mpeg': { schema: binary },
    'audio/ogg': { schema: binary },
    'audio/aac': { schema: binary },
    'audio/flac': { schema: binary },
  },
};

export const speechContracts = {
  voices: route({
    method: 'GET',
    url: '/api/v1/voices',
    summary: 'The voice catalog: configured voices, the built-in espeak/en, OpenAI voices',
    responses: {
      '200': z.object({
        items: z.array(voice),
        transcription: z.boolean().meta({
          description:
            'whether POST /api/v1/transcriptions takes speech (speech.transcription_model)',
        }),
      }),
    },
    errors: {},
  }),
  transcribe: route({
    method: 'POST',
    url: '/api/v1/transcriptions',
    summary: 'What a recording says (raw audio body; speech.transcription_model)',
    rawBody: { contentTypes: audioTypes },
    querystring: z
      .object({
        language: z
          .string()
          .regex(/^[a-z]{2}$/, 'an ISO 639-1 code (en)')
          .optional()
          .meta({ description: 'a hint; absent: the model detects it' }),
      })
      .strict(),
    responses: {
      '200': z.object({
        text: z.string(),
        language: z.string().nullable(),
        duration_seconds: z.number().nullable(),
        model: z.string(),
      }),
    },
    errors: {
      '400': 'invalid_request (empty audio, a bad language)',
      '413': 'payload_too_large (speech.max_transcription_bytes)',
      '415': 'unsupported_media_type (type not taken, or bytes not of it)',
      '404': 'transcription_unavailable (no speech.transcription_model)',
      '502': 'speech_failed',
    },
  }),
  speak: route({
    method: 'POST',
    url: '/api/v1/speech',
    summary: 'Speak a text in a voice (default speech.default_voice): the audio bytes',
    body: z
      .object({
        text: text().min(1).max(100_000).meta({
          description: 'at most speech.max_characters characters (default 4000)',
        }),
        voice: z.string().min(1).max(200).optional().meta({ description: 'a voice id' }),
        format: z.enum(speechFormats).optional().meta({
          description:
            'wav for espeak and piper (their only one), mp3 for elevenlabs; openai: any, default mp3',
        }),
      })
      .strict(),
    responses: { '200': audio },
    errors: {
      '400': 'invalid_request (text empty or too long, a format the voice does not speak)',
      '404': 'voice_not_found',
      '502': 'speech_failed (the provider failed: its status, the deadline, the size)',
    },
  }),
  messageSpeech: route({
    method: 'GET',
    url: '/api/v1/chat/sessions/:sessionId/messages/:messageId/speech',
    summary: "A message read aloud in its agent's voice (made once, kept when speech.cache)",
    responses: { '200': audio },
    errors: {
      '400': 'empty_message (nothing to speak)',
      '404': 'session_not_found (also one the caller may not see), message_not_found',
      '413': 'message_too_long (over speech.max_characters)',
      '502': 'speech_failed',
    },
  }),
};

/**
 * Voices and speech (docs/PROTOCOL.md, "Voices and speech"): the catalog, text spoken on
 * request, and a message of a session read aloud in its agent's voice (`voice`, else
 * `speech.default_voice`) — made once and kept, keyed by tenant, message and voice, when
 * `speech.cache` is on.
 * Every synthesis is billed as a `usage` row of purpose `speech`.
 */
export function speechRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const api = typed(app);
  const { voices, speak, messageSpeech } = speechContracts;
  const limit = deps.config.speech.maxCharacters;

  api.get(voices.url, routeOptions(voices), async () => ({
    items: speechOf(deps).voices.map((entry) => ({ ...entry })),
    transcription: speechOf(deps).transcribe !== null,
  }));
  transcriptionRoute(app, deps);

  api.post(speak.url, routeOptions(speak), async (request, reply) => {
    const body = request.body;
    if (body.text.trim() === '') {
      throw new ParleyError('invalid_request', 'text: nothing to speak', { field: 'text' });
    }
    if (characterCount(body.text) > limit) {
      throw new ParleyError('invalid_request', `text: at most ${limit} characters`, {
        field: 'text',
      });
    }
    const speech = speechOf(deps);
    const chosen = voiceOf(speech, body.voice ?? deps.config.speech.defaultVoice);
    const spoken = await speech.speak(chosen, body.text, body.format ?? null);
    await recordSpeechUsage(deps.db, {
      tenant: request.principal.tenant,
      sessionId: null,
      turnId: null,
      agent: null,
      user: request.principal.user,
      ...billOf(spoken),
    });
    return sendAudio(reply, spoken.mediaType, spoken.audio);
  });

  api.get(messageSpeech.url, routeOptions(messageSpeech), async (request, reply) => {
    const { tenant, user } = request.principal;
    const session = request.session;
    const messageId = pathId(request.params.messageId, 'message_id');
    const message = await findSessionMessage(deps.db, tenant, session.session_id, messageId);
    if (!message) throw new ParleyError('message_not_found', 'no such message');
    const speech = speechOf(deps);
    const agent = agentsOf(deps).get(tenant, session.agent);
    const chosen = voiceOf(speech, agent?.voice ?? deps.config.speech.defaultVoice);
    const cache = deps.config.speech.cache;
    if (cache) {
      const kept = await readSpeech(deps.db, tenant, message.message_id, chosen.id);
      if (kept) return sendAudio(reply, kept.media_type, kept.audio);
    }
    if (message.content.trim() === '') {
      throw new ParleyError('empty_message', 'the message has no text to speak');
    }
    if (characterCount(message.content) > limit) {
      throw new ParleyError(
        'message_too_long',
        `the message is longer than speech.max_characters (${limit})`,
      );
    }
    const spoken = await speech.speak(chosen, message.content, null);
    await deps.db.transaction(async (tx) => {
      if (cache) {
        await saveSpeech(tx, {
          tenant,
          messageId: message.message_id,
          voice: chosen.id,
          mediaType: spoken.mediaType,
          audio: spoken.audio,
        });
      }
      await recordSpeechUsage(tx, {
        tenant,
        sessionId: session.session_id,
        turnId: message.turn_id,
        agent: session.agent,
        user,
        ...billOf(spoken),
      });
    });
    return sendAudio(reply, spoken.mediaType, spoken.audio);
  });
}

/**
 * Speech input: the raw recording (a type browsers record, its bytes checked) in, the
 * text heard out, billed as a `usage` row of purpose `transcription`. Refused before a
 * byte is read: no transcription model (404), a type not taken (415), a Content-Length
 * over `speech.max_transcription_bytes` (413). Its own scope: a raw-body parser.
 */
function transcriptionRoute(app: FastifyInstance, deps: ApiDeps): void {
  const { transcribe } = speechContracts;
  const bodyLimit = deps.config.speech.maxTranscriptionBytes;
  const refuseEarly = (request: FastifyRequest) => {
    if (speechOf(deps).transcribe === null) {
      throw new ParleyError('transcription_unavailable', 'this server takes no speech input');
    }
    return declaredAudio(request);
  };
  void app.register(async (scope) => {
    rawBodies(scope, bodyLimit);
    typed(scope).post(
      transcribe.url,
      {
        ...routeOptions(transcribe),
        bodyLimit,
        preParsing: async (request: FastifyRequest) => {
          refuseEarly(request);
        },
      },
      async (request) => {
        const mediaType = refuseEarly(request);
        const data = request.body as Buffer | undefined;
        if (!data || data.byteLength === 0) {
          throw new ParleyError('invalid_request', 'the recording is empty');
        }
        if (!audioBytesMatch(mediaType, data)) {
          throw new ParleyError('unsupported_media_type', `the bytes are not ${mediaType}`);
        }
        const heard = await (speechOf(deps).transcribe as Transcribe)({
          audio: new Uint8Array(data),
          language: request.query.language ?? null,
        });
        await recordSpeechUsage(deps.db, {
          tenant: request.principal.tenant,
          sessionId: null,
          turnId: null,
          agent: null,
          user: request.principal.user,
          model: heard.model,
          characters: characterCount(heard.text),
          costUsd: heard.costUsd,
          latencyMs: heard.latencyMs,
          purpose: 'transcription',
        });
        return {
          text: heard.text,
          language: heard.language,
          duration_seconds: heard.durationSeconds,
          model: heard.model,
        };
      },
    );
  });
}

function declaredAudio(request: FastifyRequest): AudioType {
  const mediaType = declaredMediaType(request);
  if (!isAudioType(mediaType)) {
    throw new ParleyError(
      'unsupported_media_type',
      `send the recording as one of ${audioTypes.join(', ')}`,
    );
  }
  return mediaType;
}

function voiceOf(speech: Speech, id: string): VoiceConfig {
  const found = speech.voice(id);
  if (!found) throw new ParleyError('voice_not_found', 'no such voice', { field: 'voice' });
  return found;
}

function billOf(spoken: Spoken) {
  return {
    model: spoken.model,
    characters: spoken.characters,
    costUsd: spoken.costUsd,
    latencyMs: spoken.latencyMs,
  };
}

function sendAudio(reply: FastifyReply, mediaType: string, bytes: Uint8Array) {
  return reply
    .header('content-type', mediaType)
    .header('cache-control', 'private, no-store')
    .header('x-content-type-options', 'nosniff')
    .send(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
}
