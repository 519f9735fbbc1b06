import type { ProviderConfig } from '../config/types.js';
import type { Credentials } from '../providers/credentials.js';
import { readBounded, TooLargeError } from './bounded.js';
import { SpeechFailure } from './failure.js';
import { isWav } from './wav.js';

/**
 * Piper's HTTP server (`python3 -m piper.http_server`): `POST /` with the JSON `{"text",
 * "voice"}` (the voice: a model name the server has) answers the WAV. Only a WAV is taken
 * as an answer; nothing of another body is passed on.
 */
export async function speakWithPiper(
  provider: ProviderConfig,
  credentials: Credentials,
  options: {
    voiceKey: string;
    text: string;
    maxBytes: number;
    signal: AbortSignal;
    fetch: typeof fetch;
  },
): Promise<Uint8Array> {
  const where = `provider "${provider.name}"`;
  let response: Response;
  try {
    response = await options.fetch(`${provider.baseUrl ?? ''}/`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'audio/wav',
        ...credentials.headers,
        ...(credentials.apiKey ? { authorization: `Bearer ${credentials.apiKey}` } : {}),
      },
      body: JSON.stringify({ text: options.text, voice: options.voiceKey }),
      signal: options.signal,
    });
  } catch {
    throw new SpeechFailure(
      options.signal.aborted ? `${where} took too long to speak` : `${where} could not be reached`,
    );
  }
  if (!response.ok) {
    await response.body?.cancel().catch(() => {});
    throw new SpeechFailure(`${where} answered HTTP ${response.status}`);
  }
  let audio: Uint8Array;
  try {
    audio = await readBounded(response, options.maxBytes);
  } catch (error) {
    if (error instanceof TooLargeError) {
      throw new SpeechFailure(`${where} answered more than ${options.maxBytes} bytes`);
    }
    throw new SpeechFailure(
      options.signal.aborted ? `${where} took too long to speak` : `${where} broke off its answer`,
    );
  }
  if (!isWav(audio)) throw new SpeechFailure(`${where} did not answer with a WAV`);
  return audio;
}
