import { describe, expect, it } from 'vitest';
import { compileConfig, ConfigError } from '../src/config/load.js';
import { isParleyError } from '../src/errors.js';
import { createSpeech } from '../src/speech/speech.js';
import { settleWavLengths } from '../src/speech/wav.js';

// Voices and speech without a database (docs/PROTOCOL.md, "Voices and speech"): the
// catalog as the configuration compiles it, the errors that name their key, and
// espeak-ng's own bounds.

const compile = (file: Record<string, unknown>, env: Record<string, string> = {}) =>
  compileConfig(file, env);

function configError(file: Record<string, unknown>): string {
  try {
    compile(file);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('the configuration compiled');
}

describe('the voice configuration', () => {
  it('speaks by default: the built-in espeak/en is the catalog and the default voice', () => {
    const config = compile({});
    expect(config.voices.map((voice) => voice.id)).toEqual(['espeak/en']);
    expect(config.speech).toEqual({
      defaultVoice: 'espeak/en',
      cache: true,
      maxCharacters: 4000,
      timeoutMs: 60_000,
      maxAudioBytes: 32 * 1024 * 1024,
      // No speech input unless a transcription model is named.
      transcription: null,
      maxTranscriptionBytes: 25 * 1024 * 1024,
    });
    expect(config.agents.default?.voice).toBeNull();
  });

  it('compiles voices, an agent voice, and adds the openai voices of a speaking openai provider', () => {
    const config = compile({
      providers: {
        demo: { kind: 'demo' },
        piper: { kind: 'piper', base_url: 'http://127.0.0.1:5000/' },
        oa: { kind: 'openai', api_key_env: 'OPENAI_API_KEY', speech_model: 'tts-1' },
        chat: { kind: 'openai', api_key_env: 'OPENAI_API_KEY' },
      },
      voices: [
        { provider: 'piper', key: 'de_DE-thorsten-high', language: 'de', locale: 'de-DE' },
        { id: 'espeak/fr', provider: 'espeak', key: 'fr', name: 'Français' },
      ],
      speech: { default_voice: 'piper/de_DE-thorsten-high', cache: false },
      agents: { default: { model: 'demo/echo', voice: 'oa/coral' } },
    });
    const ids = config.voices.map((voice) => voice.id);
    expect(ids).toEqual(
      expect.arrayContaining(['piper/de_DE-thorsten-high', 'espeak/fr', 'espeak/en', 'oa/coral']),
    );
    // An openai provider that only chats offers no voices.
    expect(ids.some((id) => id.startsWith('chat/'))).toBe(false);
    expect(config.voices.find((voice) => voice.id === 'piper/de_DE-thorsten-high')).toEqual({
      id: 'piper/de_DE-thorsten-high',
      name: 'de_DE-thorsten-high',
      provider: 'piper',
      key: 'de_DE-thorsten-high',
      language: 'de',
      locale: 'de-DE',
      gender: '',
      quality: '',
    });
    expect(config.speech).toMatchObject({
      defaultVoice: 'piper/de_DE-thorsten-high',
      cache: false,
    });
    expect(config.agents.default?.voice).toBe('oa/coral');
    expect(config.providers.oa?.speechModel).toBe('tts-1');
    expect(config.providers.piper?.baseUrl).toBe('http://127.0.0.1:5000');
  });

  it('refuses what cannot speak, naming the key', () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ agents: { default: { voice: 'espeak/xx' } } }, 'agents.default.voice'],
      [{ speech: { default_voice: 'espeak/xx' } }, 'speech.default_voice'],
      [{ speech: { default_voice: 'no-slash' } }, 'speech.default_voice'],
      [{ voices: [{ provider: 'nobody', key: 'x' }] }, 'voices.0.provider'],
      [
        { providers: { demo: { kind: 'demo' } }, voices: [{ provider: 'demo', key: 'x' }] },
        'voices.0.provider',
      ],
      [{ voices: [{ id: 'espeak/de', provider: 'espeak', key: 'fr' }] }, 'voices.0.id'],
      [
        {
          voices: [
            { provider: 'espeak', key: 'de' },
            { provider: 'espeak', key: 'de' },
          ],
        },
        'voices.1.id',
      ],
      [{ voices: [{ provider: 'espeak', key: '-w /tmp/x' }] }, 'voices.0.key'],
      [{ voices: [{ provider: 'espeak', key: 'en', colour: 'red' }] }, 'voices.0'],
      [{ providers: { piper: { kind: 'piper' } } }, 'providers.piper.base_url'],
      [
        { providers: { espeak: { kind: 'espeak', base_url: 'http://x' } } },
        'providers.espeak.base_url',
      ],
      [
        { providers: { demo: { kind: 'demo', speech_model: 'tts-1' } } },
        'providers.demo.speech_model',
      ],
      [
        {
          providers: { piper: { kind: 'piper', base_url: 'http://127.0.0.1:5000' } },
          agents: { default: { model: 'piper/en' } },
        },
        'agents.default.model',
      ],
      [{ providers: { el: { kind: 'elevenlabs' } } }, 'providers.el.api_key_env'],
      [
        {
          providers: { el: { kind: 'elevenlabs', api_key_env: 'EL_KEY' } },
          agents: { default: { model: 'el/eleven_multilingual_v2' } },
        },
        'agents.default.model',
      ],
      [{ speech: { max_characters: 0 } }, 'speech.max_characters'],
      [{ speech: { transcription_model: 'nobody/whisper-1' } }, 'speech.transcription_model'],
      [{ speech: { transcription_model: 'demo/whisper-1' } }, 'speech.transcription_model'],
      [{ speech: { transcription_model: 'whisper-1' } }, 'speech.transcription_model'],
      // An agent's icon is a picture URL: https, or inline bytes of the type it names.
      [{ agents: { default: { icon: 'http://example.com/a.png' } } }, 'agents.default.icon'],
      [{ agents: { default: { icon: 'data:image/gif;base64,aGVsbG8=' } } }, 'agents.default.icon'],
      [{ agents: { default: { icon: 'data:text/html;base64,PGI+' } } }, 'agents.default.icon'],
    ];
    for (const [file, key] of cases) expect(configError(file), JSON.stringify(file)).toContain(key);
  });
});

describe('espeak-ng', () => {
  it('writes a WAV whose lengths are settled, bounded by speech.max_audio_bytes', async () => {
    const config = compile({ speech: { max_audio_bytes: 2048 } });
    const speech = createSpeech(config, { env: {} });
    const voice = speech.voice('espeak/en');
    expect(voice).not.toBeNull();
    const failure = await speech
      .speak(
        voice as NonNullable<typeof voice>,
        'A sentence far longer than two kilobytes of audio.',
        null,
      )
      .catch((error: unknown) => error);
    expect(isParleyError(failure) && failure.code).toBe('speech_failed');
    expect((failure as Error).message).toContain('2048');
  });

  it('answers speech_failed when espeak-ng is not there, and never runs a shell', async () => {
    const config = compile({});
    const speech = createSpeech(config, { env: {}, espeakCommand: 'espeak-ng-not-installed' });
    const failure = await speech
      .speak(config.voices[0] as (typeof config.voices)[number], '$(touch /tmp/pwned); hello', null)
      .catch((error: unknown) => error);
    expect(isParleyError(failure) && failure.code).toBe('speech_failed');
    expect((failure as Error).message).toContain('not installed');
  });

  it('settles the RIFF and data lengths a pipe could not write', () => {
    const bytes = new Uint8Array(44 + 10);
    const view = new DataView(bytes.buffer);
    const put = (at: number, text: string) =>
      [...text].forEach((c, i) => view.setUint8(at + i, c.charCodeAt(0)));
    put(0, 'RIFF');
    view.setUint32(4, 0x7ffff024, true);
    put(8, 'WAVE');
    put(12, 'fmt ');
    view.setUint32(16, 16, true);
    put(36, 'data');
    view.setUint32(40, 0x7ffff000, true);
    settleWavLengths(bytes);
    expect(view.getUint32(4, true)).toBe(46);
    expect(view.getUint32(40, true)).toBe(10);
  });
});
