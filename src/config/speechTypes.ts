/** Compiled `voices` and `speech` (docs/configuration.md). */

/** One voice of the catalog (`voices:` and the built-in ones; docs/PROTOCOL.md). */
export interface VoiceConfig {
  /** `<provider>/<key>`. */
  id: string;
  name: string;
  /** A provider's name (`providers:`), or `espeak`: the built-in espeak-ng. */
  provider: string;
  /** What the provider calls it: espeak-ng's voice, a Piper model, an OpenAI voice. */
  key: string;
  language: string;
  locale: string;
  gender: string;
  quality: string;
}

/** `speech:` compiled. */
export interface SpeechConfig {
  defaultVoice: string;
  cache: boolean;
  maxCharacters: number;
  timeoutMs: number;
  maxAudioBytes: number;
  /** Speech input's model, of an openai provider; null: no speech input. */
  transcription: { provider: string; modelId: string } | null;
  maxTranscriptionBytes: number;
}
