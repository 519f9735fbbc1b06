import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import { ParleyError } from '../errors.js';
import { voice } from '../protocol/rest.js';
import { characterCount, speechFormats, type Speech, type Spoken } from '../speech/speech.js';
import { findSessionMessage, readSpeech, recordSpeechUsage, saveSpeech } from '../store/speech.js';
import type { VoiceConfig } from '../config/types.js';
import { route, routeOptions, typed } from './contract.js';
import { agentsOf, speechOf, type ApiDeps } from './deps.js';
import { pathId, text } from './validate.js';

const binary = { type: 'string', format: 'binary' };
const audio = {
  description: 'The audio: audio/wav (espeak, piper), else of the format asked (openai)',
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
    responses: { '200': z.object({ items: z.array(voice) }) },
    errors: {},
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
          description: 'wav for espeak and piper (their only one); openai: any, default mp3',
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
  }));

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
