import { ConfigError } from './errors.js';
import type { ConfigFile } from './schema.js';
import type { ProviderConfig, ProviderKind, SpeechConfig, VoiceConfig } from './types.js';

/**
 * The voice catalog (docs/PROTOCOL.md, "Voices and speech"): the built-in `espeak/en`
 * (espeak-ng, on the machine, no network), the configured `voices:` (an ElevenLabs voice is
 * listed there by its voice id), and OpenAI's fixed voices for each openai provider set up
 * to speak (its `speech_model` set, or a configured voice naming it). A voice id is `<provider>/<key>`; ids are unique. Voices are the operator's: a tenant's agent may name
 * one, never define one.
 */

/** The provider name of the built-in espeak-ng, usable without a `providers:` entry. */
export const builtInSpeechProvider = 'espeak';

export const builtInVoice: VoiceConfig = {
  id: 'espeak/en',
  name: 'English (espeak-ng)',
  provider: builtInSpeechProvider,
  key: 'en',
  language: 'en',
  locale: 'en-US',
  gender: '',
  quality: 'low',
};

/** OpenAI's speech voices (its `/v1/audio/speech` `voice`). */
export const openaiVoices = [
  'alloy',
  'ash',
  'ballad',
  'coral',
  'echo',
  'fable',
  'nova',
  'onyx',
  'sage',
  'shimmer',
  'verse',
] as const;

/** Provider kinds whose voices speak through a named speech model (`speech_model`). */
export const speechModelKinds: ReadonlySet<ProviderKind> = new Set(['openai', 'elevenlabs']);

/** A provider's speech model when `speech_model` is not set (unused by other kinds). */
export function defaultSpeechModel(kind: ProviderKind): string {
  return kind === 'elevenlabs' ? 'eleven_multilingual_v2' : 'gpt-4o-mini-tts';
}

/** The provider a voice speaks through: a configured one, else the built-in espeak-ng. */
export function speechProviderOf(
  providers: Readonly<Record<string, ProviderConfig>>,
  name: string,
): ProviderConfig | null {
  if (Object.hasOwn(providers, name)) return providers[name] as ProviderConfig;
  if (name !== builtInSpeechProvider) return null;
  return {
    name,
    kind: 'espeak',
    apiKeyEnv: null,
    baseUrl: null,
    headersFromEnv: {},
    api: 'responses',
    speechModel: '',
    firstTokenTimeoutMs: 0,
    idleTimeoutMs: 0,
    circuit: { failures: 0, openMs: 30_000 },
  };
}

const speaking = new Set<ProviderKind>(['espeak', 'piper', 'openai', 'elevenlabs']);

export function compileVoices(
  file: ConfigFile,
  providers: Readonly<Record<string, ProviderConfig>>,
): VoiceConfig[] {
  const voices = new Map<string, VoiceConfig>();
  file.voices.forEach((voice, index) => {
    const where = `voices.${index}`;
    const id = `${voice.provider}/${voice.key}`;
    if (voice.id !== undefined && voice.id !== id) {
      throw new ConfigError(`${where}.id: must be "<provider>/<key>" (${id})`);
    }
    const provider = speechProviderOf(providers, voice.provider);
    if (!provider) {
      throw new ConfigError(
        `${where}.provider: no provider named "${voice.provider}" in providers`,
      );
    }
    if (!speaking.has(provider.kind)) {
      throw new ConfigError(
        `${where}.provider: a provider of kind ${provider.kind} does not speak (espeak, piper, openai or elevenlabs)`,
      );
    }
    if (voices.has(id)) throw new ConfigError(`${where}.id: the voice ${id} is listed twice`);
    voices.set(id, {
      id,
      name: voice.name ?? voice.key,
      provider: voice.provider,
      key: voice.key,
      language: voice.language,
      locale: voice.locale,
      gender: voice.gender,
      quality: voice.quality,
    });
  });
  if (
    !voices.has(builtInVoice.id) &&
    speechProviderOf(providers, builtInSpeechProvider)?.kind === 'espeak'
  ) {
    voices.set(builtInVoice.id, builtInVoice);
  }
  const named = new Set(file.voices.map((voice) => voice.provider));
  for (const provider of Object.values(providers)) {
    if (provider.kind !== 'openai') continue;
    if (file.providers[provider.name]?.speech_model === undefined && !named.has(provider.name)) {
      continue;
    }
    for (const key of openaiVoices) {
      const id = `${provider.name}/${key}`;
      if (voices.has(id)) continue;
      voices.set(id, {
        id,
        name: key[0]?.toUpperCase() + key.slice(1),
        provider: provider.name,
        key,
        language: '',
        locale: '',
        gender: '',
        quality: provider.speechModel,
      });
    }
  }
  return [...voices.values()];
}

export function compileSpeech(file: ConfigFile, voices: readonly VoiceConfig[]): SpeechConfig {
  const speech = file.speech;
  if (!voices.some((voice) => voice.id === speech.default_voice)) {
    throw new ConfigError(`speech.default_voice: no voice "${speech.default_voice}" in voices`);
  }
  return {
    defaultVoice: speech.default_voice,
    cache: speech.cache,
    maxCharacters: speech.max_characters,
    timeoutMs: speech.timeout_ms,
    maxAudioBytes: speech.max_audio_bytes,
    transcription: transcriptionModel(file),
    maxTranscriptionBytes: speech.max_transcription_bytes,
  };
}

function transcriptionModel(file: ConfigFile): SpeechConfig['transcription'] {
  const named = file.speech.transcription_model;
  if (named === null) return null;
  const slash = named.indexOf('/');
  const provider = named.slice(0, slash);
  const kind = file.providers[provider]?.kind;
  if (kind !== 'openai') {
    throw new ConfigError(
      kind === undefined
        ? `speech.transcription_model: no provider named "${provider}"`
        : `speech.transcription_model: the provider "${provider}" (kind ${kind}) has no transcription models; an openai provider has`,
    );
  }
  return { provider, modelId: named.slice(slash + 1) };
}
