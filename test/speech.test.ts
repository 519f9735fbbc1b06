import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkJournalInvariants } from './support/invariants.js';
import { until } from './support/poll.js';
import { ProviderServer } from './support/providerServer.js';
import { providerKey } from './support/providerKinds.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// Voices and speech (docs/PROTOCOL.md, "Voices and speech"), on the engine the suite runs
// on: the catalog, espeak-ng for real (the bytes are a WAV whose header holds together),
// Piper's HTTP server and OpenAI's speech endpoint as local fakes replaying their wire
// formats, a message read aloud once and then served from the database, its bill, and
// tenancy.

let server: TestServer;
let providers: ProviderServer;
const keys = { alice: 'alice-key', bob: 'bob-key', globex: 'globex-key' };
const auth = (key: string) => ({ authorization: `Bearer ${key}` });
const piperVoice = 'piper/en_US-lessac-medium';
/** An ElevenLabs voice id (its premade "Rachel"). */
const elevenVoice = '21m00Tcm4TlvDq8ikWAM';
/** A 1×1 PNG, inline. */
const pngIcon =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

beforeAll(async () => {
  providers = await ProviderServer.start();
  server = await startTestServer(
    {
      auth: {
        keys: [
          { key_env: 'K_ALICE', tenant: 'acme', user: 'alice', roles: [] },
          { key_env: 'K_BOB', tenant: 'acme', user: 'bob', roles: [] },
          { key_env: 'K_GLOBEX', tenant: 'globex', user: 'gus', roles: [] },
        ],
      },
      providers: {
        demo: { kind: 'demo' },
        piper: { kind: 'piper', base_url: `${providers.url}/piper` },
        oa: {
          kind: 'openai',
          api_key_env: 'TEST_PROVIDER_KEY',
          base_url: `${providers.url}/v1`,
          speech_model: 'tts-1',
        },
        el: {
          kind: 'elevenlabs',
          api_key_env: 'TEST_PROVIDER_KEY',
          base_url: `${providers.url}/el`,
        },
      },
      voices: [
        {
          provider: 'piper',
          key: 'en_US-lessac-medium',
          name: 'Lessac',
          language: 'en',
          locale: 'en-US',
          gender: 'male',
          quality: 'medium',
        },
        { id: 'espeak/de', provider: 'espeak', key: 'de', name: 'Deutsch', language: 'de' },
        { provider: 'el', key: elevenVoice, name: 'Rachel', language: 'en', gender: 'female' },
      ],
      // OpenAI's tts-1: USD 15 per million characters; whisper-1: USD 0.006 a minute.
      pricing: {
        'oa/tts-1': { input: 15, output: 0 },
        'oa/whisper-1': { input: 0, output: 0, per_minute: 0.006 },
        'el/eleven_multilingual_v2': { input: 100, output: 0 },
      },
      speech: { transcription_model: 'oa/whisper-1', max_transcription_bytes: 65_536 },
      agents: {
        default: { model: 'demo/echo' },
        deutsch: { model: 'demo/echo', voice: 'espeak/de', icon: pngIcon },
        lessac: { model: 'demo/echo', voice: piperVoice, icon: 'https://example.com/lessac.png' },
      },
    },
    { K_ALICE: keys.alice, K_BOB: keys.bob, K_GLOBEX: keys.globex, TEST_PROVIDER_KEY: providerKey },
  );
});
afterAll(async () => {
  if (server) {
    await checkJournalInvariants(server.db);
    await server.close();
  }
  await providers?.close();
});

/** The raw answer: status, content type and bytes (audio is not JSON). */
async function raw(
  method: string,
  path: string,
  key: string,
  body?: unknown,
): Promise<{ status: number; type: string; bytes: Uint8Array; json: any }> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      'parley-protocol-version': '1',
      ...auth(key),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? null : JSON.stringify(body),
  });
  const bytes = new Uint8Array(await response.arrayBuffer());
  const type = response.headers.get('content-type') ?? '';
  let json: unknown = null;
  if (type.startsWith('application/json')) json = JSON.parse(new TextDecoder().decode(bytes));
  return { status: response.status, type, bytes, json };
}

const ascii = (bytes: Uint8Array, from: number, to: number) =>
  String.fromCharCode(...bytes.subarray(from, to));

/**
 * Reads a WAV's header as a player would, checking that it holds together: RIFF/WAVE, a
 * PCM `fmt ` chunk, a `data` chunk whose length is what follows it, and the RIFF length
 * the file's. Answers the duration in seconds.
 */
function wavSeconds(bytes: Uint8Array): number {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  expect(ascii(bytes, 0, 4)).toBe('RIFF');
  expect(ascii(bytes, 8, 12)).toBe('WAVE');
  expect(view.getUint32(4, true)).toBe(bytes.byteLength - 8);
  let at = 12;
  let byteRate = 0;
  let dataBytes = -1;
  while (at + 8 <= bytes.byteLength) {
    const id = ascii(bytes, at, at + 4);
    const size = view.getUint32(at + 4, true);
    if (id === 'fmt ') {
      const format = view.getUint16(at + 8, true);
      const channels = view.getUint16(at + 10, true);
      const sampleRate = view.getUint32(at + 12, true);
      byteRate = view.getUint32(at + 16, true);
      const blockAlign = view.getUint16(at + 20, true);
      const bits = view.getUint16(at + 22, true);
      expect(format).toBe(1);
      expect(channels).toBeGreaterThan(0);
      expect(sampleRate).toBeGreaterThanOrEqual(8000);
      expect(blockAlign).toBe((channels * bits) / 8);
      expect(byteRate).toBe(sampleRate * blockAlign);
    }
    if (id === 'data') {
      dataBytes = size;
      expect(at + 8 + size).toBe(bytes.byteLength);
      break;
    }
    at += 8 + size + (size % 2);
  }
  expect(byteRate).toBeGreaterThan(0);
  expect(dataBytes).toBeGreaterThan(0);
  return dataBytes / byteRate;
}

/** A small valid PCM WAV (16 kHz mono, `seconds` of silence), as Piper's server answers. */
function silentWav(seconds: number): Uint8Array {
  const rate = 16000;
  const data = Math.round(rate * seconds) * 2;
  const bytes = new Uint8Array(44 + data);
  const view = new DataView(bytes.buffer);
  const put = (at: number, text: string) =>
    [...text].forEach((c, i) => view.setUint8(at + i, c.charCodeAt(0)));
  put(0, 'RIFF');
  view.setUint32(4, 36 + data, true);
  put(8, 'WAVE');
  put(12, 'fmt ');
  view.setUint32(16, 16, true);
  view.setUint16(20, 1, true);
  view.setUint16(22, 1, true);
  view.setUint32(24, rate, true);
  view.setUint32(28, rate * 2, true);
  view.setUint16(32, 2, true);
  view.setUint16(34, 16, true);
  put(36, 'data');
  view.setUint32(40, data, true);
  return bytes;
}

async function speechUsage(where = "purpose = 'speech'", params: unknown[] = []) {
  return (
    await server.db.query<{
      tenant: string;
      session_id: string | null;
      turn_id: string | null;
      agent: string | null;
      user_name: string | null;
      model: string;
      characters: number;
      cost_usd: number;
      input_tokens: number;
    }>(`select * from usage where ${where} order by usage_id`, params)
  ).rows;
}

async function speechRows(messageId: string) {
  return (
    await server.db.query<{ tenant: string; voice: string; media_type: string }>(
      'select tenant, voice, media_type from speech where message_id = $1',
      [messageId],
    )
  ).rows;
}

/** A session of `agent` with one exchange, and its reply's message id once it is there. */
async function conversation(key: string, agent: string, message: string) {
  const created = await request(server.url, 'POST', '/api/v1/chat/sessions', { agent }, auth(key));
  expect(created.status).toBe(201);
  const sessionId = created.body.session_id as string;
  const admitted = await request(
    server.url,
    'POST',
    '/api/v1/chat/turns',
    { session_id: sessionId, turn_id: `t_${Math.random().toString(36).slice(2, 10)}`, message },
    auth(key),
  );
  expect(admitted.status).toBe(202);
  const items = await until(
    async () =>
      (
        await request(
          server.url,
          'GET',
          `/api/v1/chat/sessions/${sessionId}/messages`,
          undefined,
          auth(key),
        )
      ).body.items as { id: string; role: string; content: string }[],
    (list) => list.some((item) => item.role === 'assistant'),
    'the reply',
  );
  const reply = items.find((item) => item.role === 'assistant') as { id: string; content: string };
  const asked = items.find((item) => item.role === 'user') as { id: string };
  return { sessionId, replyId: reply.id, reply: reply.content, askedId: asked.id };
}

const messageSpeech = (sessionId: string, messageId: string) =>
  `/api/v1/chat/sessions/${sessionId}/messages/${messageId}/speech`;

describe('the voice catalog', () => {
  it('lists the configured voices, the built-in espeak/en and the openai voices', async () => {
    const answer = await request(server.url, 'GET', '/api/v1/voices', undefined, auth(keys.alice));
    expect(answer.status).toBe(200);
    const items = answer.body.items as Record<string, string>[];
    const ids = items.map((item) => item.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(items.find((item) => item.id === piperVoice)).toEqual({
      id: piperVoice,
      name: 'Lessac',
      provider: 'piper',
      key: 'en_US-lessac-medium',
      language: 'en',
      locale: 'en-US',
      gender: 'male',
      quality: 'medium',
    });
    expect(items.find((item) => item.id === 'espeak/en')).toMatchObject({
      provider: 'espeak',
      key: 'en',
    });
    expect(items.find((item) => item.id === 'espeak/de')).toMatchObject({ name: 'Deutsch' });
    expect(ids).toEqual(expect.arrayContaining(['oa/alloy', 'oa/echo', 'oa/shimmer']));
    // Every tenant sees the same (the operator's) catalog.
    const other = await request(server.url, 'GET', '/api/v1/voices', undefined, auth(keys.globex));
    expect(other.body).toEqual(answer.body);
  });
});

describe('the agents listing', () => {
  it("names each agent's voice (its own, else the default) and its icon", async () => {
    const answer = await request(server.url, 'GET', '/api/v1/agents', undefined, auth(keys.alice));
    expect(answer.status).toBe(200);
    const byName = new Map(
      (answer.body.items as { name: string; voice: string; icon: string | null }[]).map((item) => [
        item.name,
        item,
      ]),
    );
    expect(byName.get('default')).toMatchObject({ voice: 'espeak/en', icon: null });
    expect(byName.get('deutsch')).toMatchObject({ voice: 'espeak/de', icon: pngIcon });
    expect(byName.get('lessac')).toMatchObject({
      voice: piperVoice,
      icon: 'https://example.com/lessac.png',
    });
  });
});

describe('POST /api/v1/speech', () => {
  it('speaks with espeak-ng: a WAV of plausible length, billed by characters at no cost', async () => {
    const before = (await speechUsage()).length;
    const text = 'Hello from Parley, this is a short sentence.';
    const answer = await raw('POST', '/api/v1/speech', keys.alice, { text });
    expect(answer.status, JSON.stringify(answer.json)).toBe(200);
    expect(answer.type).toBe('audio/wav');
    const seconds = wavSeconds(answer.bytes);
    expect(seconds).toBeGreaterThan(0.3);
    expect(seconds).toBeLessThan(10);
    // A longer text takes longer to say.
    const longer = await raw('POST', '/api/v1/speech', keys.alice, {
      text: `${text} ${text} ${text}`,
      voice: 'espeak/en',
      format: 'wav',
    });
    expect(wavSeconds(longer.bytes)).toBeGreaterThan(seconds * 2);
    const rows = (await speechUsage()).slice(before);
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatchObject({
      tenant: 'acme',
      session_id: null,
      turn_id: null,
      agent: null,
      user_name: 'alice',
      model: 'espeak/en',
      characters: text.length,
      cost_usd: 0,
      input_tokens: 0,
    });
  });

  it('refuses an unknown voice, a text too long or empty, a format the voice lacks: nothing billed', async () => {
    const before = (await speechUsage()).length;
    const cases: [Record<string, unknown>, number, string, string][] = [
      [{ text: 'hi', voice: 'espeak/xx-nowhere' }, 404, 'voice_not_found', ''],
      [{ text: 'hi', voice: 'nobody/at-all' }, 404, 'voice_not_found', ''],
      [{ text: 'x'.repeat(4001) }, 400, 'invalid_request', 'text'],
      [{ text: '' }, 400, 'invalid_request', 'text'],
      [{ text: '   ' }, 400, 'invalid_request', 'text'],
      [{ text: 'hi', format: 'mp3' }, 400, 'invalid_request', 'format'],
      [{ text: 'hi', format: 'midi' }, 400, 'invalid_request', 'format'],
      [{ voice: 'espeak/en' }, 400, 'invalid_request', 'text'],
      [{ text: 'hi', speed: 2 }, 400, 'invalid_request', ''],
    ];
    for (const [body, status, code, field] of cases) {
      const answer = await request(server.url, 'POST', '/api/v1/speech', body, auth(keys.alice));
      expect(answer.status, JSON.stringify(body).slice(0, 60)).toBe(status);
      expect(answer.body.error).toBe(code);
      expect(answer.body.message).toContain(field);
    }
    // 4000 characters is the default limit, and still spoken.
    expect(await speechUsage()).toHaveLength(before);
  });

  it("speaks through Piper's HTTP server: POST / with the text and the voice, a WAV back", async () => {
    providers.reset();
    const wav = silentWav(0.75);
    providers.on('POST', '/piper/', { bytes: wav, headers: { 'content-type': 'audio/wav' } });
    const answer = await raw('POST', '/api/v1/speech', keys.bob, {
      text: 'Guten Tag',
      voice: piperVoice,
    });
    expect(answer.status).toBe(200);
    expect(answer.type).toBe('audio/wav');
    expect(answer.bytes).toEqual(wav);
    expect(wavSeconds(answer.bytes)).toBeCloseTo(0.75, 3);
    const sent = providers.requests.find((entry) => entry.path === '/piper/');
    expect(sent?.method).toBe('POST');
    expect(sent?.headers['content-type']).toBe('application/json');
    expect(JSON.parse(sent?.body ?? '{}')).toEqual({
      text: 'Guten Tag',
      voice: 'en_US-lessac-medium',
    });
    const [row] = (await speechUsage()).slice(-1);
    expect(row).toMatchObject({ model: piperVoice, characters: 9, cost_usd: 0, user_name: 'bob' });
  });

  it('answers a failing Piper with 502 speech_failed, nothing of its body, nothing billed', async () => {
    providers.reset();
    const before = (await speechUsage()).length;
    providers.on('POST', '/piper/', {
      status: 500,
      json: { error: 'model file /secret/path/voice.onnx is missing' },
    });
    const failed = await request(
      server.url,
      'POST',
      '/api/v1/speech',
      { text: 'hello', voice: piperVoice },
      auth(keys.alice),
    );
    expect(failed.status).toBe(502);
    expect(failed.body.error).toBe('speech_failed');
    expect(failed.body.message).toContain('500');
    expect(JSON.stringify(failed.body)).not.toContain('secret');
    // A server that answers something other than a WAV is a failure too.
    providers.on('POST', '/piper/', { json: { text: 'not audio' } });
    const notWav = await request(
      server.url,
      'POST',
      '/api/v1/speech',
      { text: 'hello', voice: piperVoice },
      auth(keys.alice),
    );
    expect(notWav.status).toBe(502);
    expect(notWav.body.error).toBe('speech_failed');
    expect(await speechUsage()).toHaveLength(before);
  });

  it("speaks through OpenAI's /audio/speech via the AI SDK, billed at the model's price", async () => {
    providers.reset();
    // An MP3 frame header after an ID3 tag: what the endpoint's default format starts with.
    const mp3 = new Uint8Array([0x49, 0x44, 0x33, 0x04, 0, 0, 0, 0, 0, 0, 0xff, 0xfb, 0x90, 0x64]);
    providers.on('POST', '/v1/audio/speech', {
      bytes: mp3,
      headers: { 'content-type': 'audio/mpeg' },
    });
    const text = 'Your order has shipped.';
    const answer = await raw('POST', '/api/v1/speech', keys.alice, { text, voice: 'oa/nova' });
    expect(answer.status).toBe(200);
    expect(answer.type).toBe('audio/mpeg');
    expect(answer.bytes).toEqual(mp3);
    const sent = providers.requests.find((entry) => entry.path === '/v1/audio/speech');
    expect(sent?.headers.authorization).toBe(`Bearer ${providerKey}`);
    expect(JSON.parse(sent?.body ?? '{}')).toMatchObject({
      model: 'tts-1',
      input: text,
      voice: 'nova',
      response_format: 'mp3',
    });
    const [row] = (await speechUsage()).slice(-1);
    expect(row).toMatchObject({ model: 'oa/tts-1', characters: text.length });
    expect(row?.cost_usd).toBeCloseTo((text.length * 15) / 1_000_000, 8);

    // Another format is asked for by name, and answered with its media type.
    providers.on('POST', '/v1/audio/speech', {
      bytes: silentWav(0.5),
      headers: { 'content-type': 'audio/wav' },
    });
    const wav = await raw('POST', '/api/v1/speech', keys.alice, {
      text,
      voice: 'oa/alloy',
      format: 'wav',
    });
    expect(wav.type).toBe('audio/wav');
    expect(wavSeconds(wav.bytes)).toBeCloseTo(0.5, 3);
    expect(JSON.parse(providers.requests.at(-1)?.body ?? '{}')).toMatchObject({
      voice: 'alloy',
      response_format: 'wav',
    });
  });

  it('answers a refusing OpenAI with 502 speech_failed naming its status, never the key', async () => {
    providers.reset();
    providers.on('POST', '/v1/audio/speech', {
      status: 401,
      json: { error: { message: `Incorrect API key provided: ${providerKey}` } },
    });
    const failed = await request(
      server.url,
      'POST',
      '/api/v1/speech',
      { text: 'hello', voice: 'oa/alloy' },
      auth(keys.alice),
    );
    expect(failed.status).toBe(502);
    expect(failed.body.error).toBe('speech_failed');
    expect(failed.body.message).toContain('401');
    expect(JSON.stringify(failed.body)).not.toContain(providerKey);
  });
});

describe('ElevenLabs speech', () => {
  it('speaks through /v1/text-to-speech/{voice} via the AI SDK, billed per character', async () => {
    providers.reset();
    const mp3 = new Uint8Array([0x49, 0x44, 0x33, 0x04, 0, 0, 0, 0, 0, 0, 0xff, 0xfb, 0x90, 0x64]);
    const path = `/el/v1/text-to-speech/${elevenVoice}`;
    providers.on('POST', path, { bytes: mp3, headers: { 'content-type': 'audio/mpeg' } });
    const text = 'Bonjour, ça va ?';
    const answer = await raw('POST', '/api/v1/speech', keys.alice, {
      text,
      voice: `el/${elevenVoice}`,
    });
    expect(answer.status).toBe(200);
    expect(answer.type).toBe('audio/mpeg');
    expect(answer.bytes).toEqual(mp3);
    const sent = providers.requests.find((entry) => entry.path === path);
    expect(sent?.headers['xi-api-key']).toBe(providerKey);
    expect(sent?.query.get('output_format')).toBe('mp3_44100_128');
    expect(JSON.parse(sent?.body ?? '{}')).toEqual({ text, model_id: 'eleven_multilingual_v2' });
    const [row] = (await speechUsage()).slice(-1);
    expect(row).toMatchObject({ model: 'el/eleven_multilingual_v2', characters: 16 });
    expect(row?.cost_usd).toBeCloseTo((16 * 100) / 1_000_000, 8);
  });

  it('refuses a format ElevenLabs does not speak, and tells its failure without its body', async () => {
    providers.reset();
    const wav = await request(
      server.url,
      'POST',
      '/api/v1/speech',
      { text: 'hello', voice: `el/${elevenVoice}`, format: 'wav' },
      auth(keys.alice),
    );
    expect(wav.status).toBe(400);
    expect(wav.body).toMatchObject({ error: 'invalid_request', field: 'format' });
    expect(providers.requests).toHaveLength(0);
    providers.on('POST', `/el/v1/text-to-speech/${elevenVoice}`, {
      status: 401,
      json: { detail: { status: 'invalid_api_key', message: `Invalid key ${providerKey}` } },
    });
    const failed = await request(
      server.url,
      'POST',
      '/api/v1/speech',
      { text: 'hello', voice: `el/${elevenVoice}` },
      auth(keys.alice),
    );
    expect(failed.status).toBe(502);
    expect(failed.body.error).toBe('speech_failed');
    expect(failed.body.message).toContain('401');
    expect(JSON.stringify(failed.body)).not.toContain(providerKey);
  });
});

describe('a message read aloud (GET .../messages/{id}/speech)', () => {
  it("speaks in the agent's voice, once: the second answer comes from the database", async () => {
    const { sessionId, replyId, reply } = await conversation(keys.alice, 'deutsch', 'guten morgen');
    const first = await raw('GET', messageSpeech(sessionId, replyId), keys.alice);
    expect(first.status).toBe(200);
    expect(first.type).toBe('audio/wav');
    const seconds = wavSeconds(first.bytes);
    expect(seconds).toBeGreaterThan(0.3);
    expect(seconds).toBeLessThan(10);
    const second = await raw('GET', messageSpeech(sessionId, replyId), keys.alice);
    expect(second.status).toBe(200);
    expect(second.bytes).toEqual(first.bytes);
    expect(await speechRows(replyId)).toEqual([
      { tenant: 'acme', voice: 'espeak/de', media_type: 'audio/wav' },
    ]);
    const billed = await speechUsage("purpose = 'speech' and session_id = $1", [sessionId]);
    expect(billed).toHaveLength(1);
    expect(billed[0]).toMatchObject({
      tenant: 'acme',
      agent: 'deutsch',
      user_name: 'alice',
      model: 'espeak/de',
      characters: [...reply].length,
      cost_usd: 0,
    });
    expect(billed[0]?.turn_id).not.toBeNull();
  });

  it('answers two requests for one message made at once alike, keeping one copy', async () => {
    const { sessionId, replyId } = await conversation(keys.alice, 'deutsch', 'zwei auf einmal');
    // Both miss the cache and speak (a busy machine may let the first finish first): the
    // second to store finds the first's copy there. Each synthesis is billed.
    const [one, two] = await Promise.all([
      raw('GET', messageSpeech(sessionId, replyId), keys.alice),
      raw('GET', messageSpeech(sessionId, replyId), keys.alice),
    ]);
    expect([one.status, two.status]).toEqual([200, 200]);
    expect(two.bytes).toEqual(one.bytes);
    expect(await speechRows(replyId)).toHaveLength(1);
    expect(await speechUsage("purpose = 'speech' and session_id = $1", [sessionId])).toHaveLength(
      2,
    );
  });

  it('uses speech.default_voice for an agent without a voice, and reads any message', async () => {
    const { sessionId, askedId } = await conversation(keys.alice, 'default', 'read me');
    const answer = await raw('GET', messageSpeech(sessionId, askedId), keys.alice);
    expect(answer.status).toBe(200);
    expect((await speechRows(askedId)).map((row) => row.voice)).toEqual(['espeak/en']);
  });

  it('answers a missing message, or one of another session, alike: 404 message_not_found', async () => {
    const mine = await conversation(keys.alice, 'default', 'one');
    const other = await conversation(keys.alice, 'default', 'two');
    const missing = await request(
      server.url,
      'GET',
      messageSpeech(mine.sessionId, 'msg_nowhere'),
      undefined,
      auth(keys.alice),
    );
    expect(missing.status).toBe(404);
    expect(missing.body.error).toBe('message_not_found');
    const elsewhere = await request(
      server.url,
      'GET',
      messageSpeech(mine.sessionId, other.replyId),
      undefined,
      auth(keys.alice),
    );
    expect(elsewhere.status).toBe(404);
    expect(elsewhere.body).toEqual(missing.body);
    expect(await speechRows(other.replyId)).toEqual([]);
  });

  it("answers another tenant's session exactly like a missing one, and writes nothing", async () => {
    const { sessionId, replyId } = await conversation(keys.alice, 'default', 'private words');
    const before = (await speechUsage()).length;
    const missing = await request(
      server.url,
      'GET',
      messageSpeech('sess_nowhere', replyId),
      undefined,
      auth(keys.globex),
    );
    const foreign = await request(
      server.url,
      'GET',
      messageSpeech(sessionId, replyId),
      undefined,
      auth(keys.globex),
    );
    expect(missing.status).toBe(404);
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual(missing.body);
    expect(await speechRows(replyId)).toEqual([]);
    expect(await speechUsage()).toHaveLength(before);
  });

  it('answers 502 when the voice fails, keeping nothing; a later success is kept', async () => {
    providers.reset();
    providers.on('POST', '/piper/', { status: 503, json: {} });
    const { sessionId, replyId } = await conversation(keys.bob, 'lessac', 'piper please');
    const failed = await request(
      server.url,
      'GET',
      messageSpeech(sessionId, replyId),
      undefined,
      auth(keys.bob),
    );
    expect(failed.status).toBe(502);
    expect(failed.body.error).toBe('speech_failed');
    expect(await speechRows(replyId)).toEqual([]);
    const wav = silentWav(1);
    providers.on('POST', '/piper/', { bytes: wav, headers: { 'content-type': 'audio/wav' } });
    const spoken = await raw('GET', messageSpeech(sessionId, replyId), keys.bob);
    expect(spoken.bytes).toEqual(wav);
    await raw('GET', messageSpeech(sessionId, replyId), keys.bob);
    expect(providers.requests.filter((entry) => entry.path === '/piper/')).toHaveLength(2);
    expect((await speechRows(replyId)).map((row) => row.voice)).toEqual([piperVoice]);
  });

  it("goes with its session: deleting the session deletes the message's speech, the bill stays", async () => {
    const { sessionId, replyId } = await conversation(keys.alice, 'default', 'soon gone');
    expect((await raw('GET', messageSpeech(sessionId, replyId), keys.alice)).status).toBe(200);
    expect(await speechRows(replyId)).toHaveLength(1);
    const deleted = await request(
      server.url,
      'DELETE',
      `/api/v1/chat/sessions/${sessionId}`,
      undefined,
      auth(keys.alice),
    );
    expect(deleted.status).toBe(204);
    expect(await speechRows(replyId)).toEqual([]);
    expect(await speechUsage("purpose = 'speech' and session_id = $1", [sessionId])).toHaveLength(
      1,
    );
  });
});

/** Posts a recording to POST /api/v1/transcriptions. */
async function transcribe(body: Uint8Array, type: string, query = '', base = server.url) {
  const response = await fetch(`${base}/api/v1/transcriptions${query}`, {
    method: 'POST',
    headers: { 'parley-protocol-version': '1', ...auth(keys.alice), 'content-type': type },
    body,
  });
  return { status: response.status, body: (await response.json()) as any };
}

describe('POST /api/v1/transcriptions', () => {
  it("hears a recording through OpenAI's /audio/transcriptions, billed by the minute", async () => {
    providers.reset();
    // OpenAI's verbose_json answer (whisper-1): the text, the language by name, the duration.
    providers.on('POST', '/v1/audio/transcriptions', {
      json: { task: 'transcribe', language: 'english', duration: 30, text: 'Ship it today.' },
    });
    const voices = await request(server.url, 'GET', '/api/v1/voices', undefined, auth(keys.alice));
    expect(voices.body.transcription).toBe(true);
    const answer = await transcribe(silentWav(0.5), 'audio/wav; codecs=1', '?language=en');
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body).toEqual({
      text: 'Ship it today.',
      language: 'en',
      duration_seconds: 30,
      model: 'oa/whisper-1',
    });
    const sent = providers.requests.find((entry) => entry.path === '/v1/audio/transcriptions');
    expect(sent?.headers.authorization).toBe(`Bearer ${providerKey}`);
    expect(sent?.headers['content-type']).toMatch(/^multipart\/form-data/);
    expect(sent?.body).toMatch(/name="model"\r\n\r\nwhisper-1/);
    expect(sent?.body).toMatch(/name="language"\r\n\r\nen/);
    expect(sent?.body).toContain('RIFF');
    const [row] = await speechUsage("purpose = 'transcription'");
    expect(row).toMatchObject({
      tenant: 'acme',
      user_name: 'alice',
      model: 'oa/whisper-1',
      characters: 'Ship it today.'.length,
      session_id: null,
    });
    expect(row?.cost_usd).toBeCloseTo(0.003, 8);
  });

  it('refuses what it cannot hear, asking no provider and billing nothing', async () => {
    providers.reset();
    const before = (await speechUsage("purpose = 'transcription'")).length;
    const cases: [Uint8Array, string, string, number, string][] = [
      [silentWav(0.1), 'text/plain', '', 415, 'unsupported_media_type'],
      [new TextEncoder().encode('not a recording'), 'audio/wav', '', 415, 'unsupported_media_type'],
      [new Uint8Array(0), 'audio/webm', '', 400, 'invalid_request'],
      [silentWav(0.1), 'audio/wav', '?language=english', 400, 'invalid_request'],
      // Over speech.max_transcription_bytes (64 KiB here).
      [silentWav(3), 'audio/wav', '', 413, 'payload_too_large'],
    ];
    for (const [body, type, query, status, code] of cases) {
      const answer = await transcribe(body, type, query);
      expect(answer.status, `${type} ${query} ${body.byteLength}`).toBe(status);
      expect(answer.body.error).toBe(code);
    }
    expect(providers.requests).toEqual([]);
    // The provider failing: 502 speech_failed, nothing billed.
    providers.on('POST', '/v1/audio/transcriptions', { status: 500, json: { error: 'down' } });
    const failed = await transcribe(silentWav(0.1), 'audio/wav');
    expect(failed.status).toBe(502);
    expect(failed.body.error).toBe('speech_failed');
    expect(failed.body.message).not.toContain(providerKey);
    expect(await speechUsage("purpose = 'transcription'")).toHaveLength(before);
  });
});

describe('with speech.cache off', () => {
  it('speaks a message on every request and keeps nothing, billing each', async () => {
    const uncached = await startTestServer(
      {
        auth: { keys: [{ key_env: 'K_ALICE', tenant: 'acme', user: 'alice', roles: [] }] },
        speech: { cache: false },
      },
      { K_ALICE: keys.alice },
    );
    try {
      // No speech.transcription_model: no speech input, and the listing says so.
      const voices = await request(
        uncached.url,
        'GET',
        '/api/v1/voices',
        undefined,
        auth(keys.alice),
      );
      expect(voices.body.transcription).toBe(false);
      const unheard = await transcribe(silentWav(0.1), 'audio/wav', '', uncached.url);
      expect(unheard.status).toBe(404);
      expect(unheard.body.error).toBe('transcription_unavailable');
      const created = await request(
        uncached.url,
        'POST',
        '/api/v1/chat/turns',
        { turn_id: 'uncached_1', message: 'say it twice' },
        auth(keys.alice),
      );
      expect(created.status).toBe(202);
      const sessionId = created.body.session_id as string;
      const items = await until(
        async () =>
          (
            await request(
              uncached.url,
              'GET',
              `/api/v1/chat/sessions/${sessionId}/messages`,
              undefined,
              auth(keys.alice),
            )
          ).body.items as { id: string; role: string }[],
        (list) => list.some((item) => item.role === 'assistant'),
        'the reply',
      );
      const replyId = (items.find((item) => item.role === 'assistant') as { id: string }).id;
      for (let index = 0; index < 2; index++) {
        const answer = await fetch(`${uncached.url}${messageSpeech(sessionId, replyId)}`, {
          headers: auth(keys.alice),
        });
        expect(answer.status).toBe(200);
        expect(wavSeconds(new Uint8Array(await answer.arrayBuffer()))).toBeGreaterThan(0.3);
      }
      const kept = await uncached.db.query('select 1 from speech');
      expect(kept.rowCount).toBe(0);
      const billed = await uncached.db.query(
        `select 1 from usage where purpose = 'speech' and session_id = $1`,
        [sessionId],
      );
      expect(billed.rowCount).toBe(2);
    } finally {
      await uncached.close();
    }
  });
});
