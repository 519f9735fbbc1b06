import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ParleyClient, ParleyClientError, type ParleyEvent } from '../src/client/index.js';
import { until } from './support/poll.js';
import { startTestServer, type TestServer } from './support/server.js';

/** The SDK's images, photos, voices and speech against a real server (both engines). */

const png = new Uint8Array([
  ...Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'),
  ...new Uint8Array(40).fill(7),
]);
const gif = new Uint8Array([...Buffer.from('GIF89a', 'latin1'), ...new Uint8Array(20).fill(2)]);

let server: TestServer;
let client: ParleyClient;
let other: ParleyClient;

beforeAll(async () => {
  server = await startTestServer(
    {
      limits: { attachment_bytes: 4096 },
      auth: {
        keys: [
          { key_env: 'K_ANN', tenant: 'acme', user: 'ann', roles: [] },
          { key_env: 'K_BEN', tenant: 'acme', user: 'ben', roles: [] },
        ],
      },
      agents: { default: { model: 'demo/vision' } },
    },
    { K_ANN: 'ann-key', K_BEN: 'ben-key' },
  );
  client = new ParleyClient({ baseUrl: server.url, apiKey: 'ann-key' });
  other = new ParleyClient({ baseUrl: server.url, apiKey: 'ben-key' });
});
afterAll(async () => {
  await server.close();
});

async function refusal(call: Promise<unknown>): Promise<ParleyClientError> {
  const error = await call.then(
    () => null,
    (failure: unknown) => failure,
  );
  expect(error).toBeInstanceOf(ParleyClientError);
  return error as ParleyClientError;
}

/** The turn's `done` event, read through a subscription. */
async function doneOf(sessionId: string, turnId: string): Promise<ParleyEvent & { type: 'done' }> {
  return new Promise((resolve, reject) => {
    const subscription = client.subscribe(sessionId, {
      after: 0,
      stopOnTerminal: false,
      onEvent: (event) => {
        if (event.type === 'done' && event.turn_ids.includes(turnId)) {
          subscription.close();
          resolve(event);
        }
      },
      onState: (change) => {
        if (change.state === 'closed' && change.reason !== 'closed') {
          reject(new Error(`subscription stopped: ${change.reason}`));
        }
      },
    });
  });
}

describe('attachments', () => {
  it('retries an upload with an idempotency key after a lost answer, storing it once', async () => {
    // The first answer is lost on the way back (the server stored it): a network error.
    let lost = 0;
    const losing = new ParleyClient({
      baseUrl: server.url,
      apiKey: 'ann-key',
      backoff: { initialMs: 1, maxMs: 5 },
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        if (init?.method === 'POST' && lost === 0) {
          lost += 1;
          await response.body?.cancel();
          throw new TypeError('fetch failed');
        }
        return response;
      },
    });
    const session = await client.createSession();
    const stored = await losing.uploadAttachment(session.session_id, png, {
      mediaType: 'image/png',
      idempotencyKey: 'client-upload-1',
    });
    expect(lost).toBe(1);
    const rows = await server.db.query<{ attachment_id: string }>(
      'select attachment_id from attachments where session_id = $1',
      [session.session_id],
    );
    expect(rows.rows.map((row) => row.attachment_id)).toEqual([stored.attachment_id]);
  });

  it('uploads an image, a turn carries it, and its bytes come back', async () => {
    const session = await client.createSession();
    const attachment = await client.uploadAttachment(
      session.session_id,
      new Blob([png], { type: 'image/png' }),
    );
    expect(attachment).toEqual({
      attachment_id: expect.stringMatching(/^att_/),
      media_type: 'image/png',
      bytes: png.byteLength,
    });
    const content = await client.attachmentContent(session.session_id, attachment.attachment_id);
    expect(content.mediaType).toBe('image/png');
    expect(Buffer.from(content.bytes).equals(Buffer.from(png))).toBe(true);

    const admission = await client.admitTurn({
      sessionId: session.session_id,
      message: 'what is this?',
      attachments: [attachment.attachment_id],
    });
    const stored = await server.db.query<{ attachments: unknown }>(
      'select attachments from turns where turn_id = $1',
      [admission.turn_id],
    );
    expect(stored.rows[0]?.attachments).toEqual([attachment.attachment_id]);
    // The demo vision model describes what it was given.
    const done = await doneOf(session.session_id, admission.turn_id);
    expect(done.final_message.content).toBe(`I see an image (image/png, ${png.byteLength} bytes).`);
  });

  it('reports what the server refuses by its code, and stores nothing', async () => {
    const session = await client.createSession();
    const text = new TextEncoder().encode('not an image at all');
    const renamed = await refusal(
      client.uploadAttachment(session.session_id, text, { mediaType: 'image/png' }),
    );
    expect([renamed.code, renamed.status]).toEqual(['unsupported_media_type', 415]);
    const plain = await refusal(
      client.uploadAttachment(session.session_id, new Blob([text], { type: 'text/plain' })),
    );
    expect(plain.code).toBe('unsupported_media_type');
    const large = new Uint8Array(8192);
    large.set(png);
    const tooLarge = await refusal(
      client.uploadAttachment(session.session_id, large, { mediaType: 'image/png' }),
    );
    expect([tooLarge.code, tooLarge.status]).toEqual(['payload_too_large', 413]);
    const count = await server.db.query<{ count: number }>(
      'select count(*)::int as count from attachments where session_id = $1',
      [session.session_id],
    );
    expect(count.rows[0]?.count).toBe(0);
  });
});

describe('photos', () => {
  it('lists, filters, pages, renames and deletes the caller’s photos', async () => {
    const first = await client.uploadPhoto(png, { mediaType: 'image/png', title: 'first' });
    expect(first).toMatchObject({ origin: 'upload', title: 'first', media_type: 'image/png' });
    const second = await client.uploadPhoto(new Blob([gif], { type: 'image/gif' }));
    expect(second.title).toBeNull();

    const all = await client.listPhotos();
    const ids = all.items.map((photo) => photo.photo_id);
    // Newest first; the chat uploads above are photos too.
    expect(ids.slice(0, 2)).toEqual([second.photo_id, first.photo_id]);
    expect(all.items.some((photo) => photo.source.attachment_id !== undefined)).toBe(true);
    expect((await client.listPhotos({ origin: 'generated' })).items).toEqual([]);

    const page1 = await client.listPhotos({ limit: 1 });
    expect(page1.items.map((photo) => photo.photo_id)).toEqual([second.photo_id]);
    const page2 = await client.listPhotos({ limit: 1, cursor: page1.next_cursor });
    expect(page2.items.map((photo) => photo.photo_id)).toEqual([first.photo_id]);

    const content = await client.photoContent(second.photo_id);
    expect(content.mediaType).toBe('image/gif');
    expect(Buffer.from(content.bytes).equals(Buffer.from(gif))).toBe(true);

    const renamed = await client.updatePhoto(first.photo_id, { title: 'renamed' });
    expect(renamed.title).toBe('renamed');
    expect((await client.getPhoto(first.photo_id)).title).toBe('renamed');
    expect((await client.updatePhoto(first.photo_id, { title: null })).title).toBeNull();

    // Personal: another user of the tenant reads it as missing.
    const foreign = await refusal(other.getPhoto(first.photo_id));
    expect([foreign.code, foreign.status]).toEqual(['photo_not_found', 404]);

    await client.deletePhoto(first.photo_id);
    const gone = await refusal(client.getPhoto(first.photo_id));
    expect(gone.code).toBe('photo_not_found');
  });

  it('copies an attachment into the library', async () => {
    const session = await client.createSession();
    const attachment = await client.uploadAttachment(session.session_id, png, {
      mediaType: 'image/png',
    });
    const copied = await client.photoFromAttachment(attachment.attachment_id, { title: 'kept' });
    expect(copied).toMatchObject({
      title: 'kept',
      source: { session_id: session.session_id, attachment_id: attachment.attachment_id },
    });
    const missing = await refusal(client.photoFromAttachment('att_nope'));
    expect(missing.code).toBe('attachment_not_found');
  });
});

describe('voices and speech', () => {
  it('lists the catalog with the built-in espeak voice', async () => {
    const voices = await client.listVoices();
    expect(voices.items.map((voice) => voice.id)).toContain('espeak/en');
  });

  it('speaks a text as WAV bytes, and names an unknown voice by its code', async () => {
    const spoken = await client.speak('Hello there.', { voice: 'espeak/en' });
    expect(spoken.mediaType).toBe('audio/wav');
    expect(Buffer.from(spoken.bytes.subarray(0, 4)).toString('latin1')).toBe('RIFF');
    const unknown = await refusal(client.speak('Hello.', { voice: 'espeak/nope' }));
    expect([unknown.code, unknown.status]).toEqual(['voice_not_found', 404]);
  });

  it("reads a reply aloud in its agent's voice, once made kept", async () => {
    const admission = await client.admitTurn({ message: 'Say something short.' });
    const done = await doneOf(admission.session_id, admission.turn_id);
    const spoken = await client.messageSpeech(admission.session_id, done.final_message.id);
    expect(spoken.mediaType).toBe('audio/wav');
    expect(Buffer.from(spoken.bytes.subarray(0, 4)).toString('latin1')).toBe('RIFF');
    await until(
      async () =>
        (
          await server.db.query<{ count: number }>(
            'select count(*)::int as count from speech where message_id = $1',
            [done.final_message.id],
          )
        ).rows[0]?.count,
      (count) => count === 1,
      'the speech to be kept',
    );
    const again = await client.messageSpeech(admission.session_id, done.final_message.id);
    expect(Buffer.from(again.bytes).equals(Buffer.from(spoken.bytes))).toBe(true);
    const missing = await refusal(client.messageSpeech(admission.session_id, 'msg_nope'));
    expect(missing.code).toBe('message_not_found');
  });
});
