import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDemoModel } from '../src/providers/demo.js';
import { streamStep } from '../src/runtime/modelStep.js';
import { readEvents } from '../src/store/readEvents.js';
import { request, startTestServer, type TestServer } from './support/server.js';

/** Small but real headers of each image type (magic bytes + padding). */
const png = Buffer.concat([
  Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'),
  Buffer.alloc(40, 7),
]);
const images: Record<string, Buffer> = {
  'image/png': png,
  'image/jpeg': Buffer.concat([Buffer.from('ffd8ffe000104a464946', 'hex'), Buffer.alloc(30, 1)]),
  'image/gif': Buffer.concat([Buffer.from('GIF89a', 'latin1'), Buffer.alloc(20, 2)]),
  'image/webp': Buffer.concat([
    Buffer.from('RIFF\x24\x00\x00\x00WEBPVP8 ', 'latin1'),
    Buffer.alloc(20, 3),
  ]),
};

let server: TestServer;
let sessionId: string;
const acme = { authorization: 'Bearer acme-key-1' };
const globex = { authorization: 'Bearer globex-key-2' };

beforeAll(async () => {
  server = await startTestServer(
    {
      limits: { attachment_bytes: 4096 },
      auth: {
        keys: [
          { key_env: 'ACME_KEY', tenant: 'acme', user: 'ann', roles: [] },
          { key_env: 'GLOBEX_KEY', tenant: 'globex', user: 'gus', roles: [] },
        ],
      },
    },
    { ACME_KEY: 'acme-key-1', GLOBEX_KEY: 'globex-key-2' },
  );
  const created = await request(server.url, 'POST', '/api/v1/chat/sessions', {}, acme);
  sessionId = created.body.session_id;
});
afterAll(async () => {
  await server.close();
});

async function upload(
  body: Buffer,
  contentType: string,
  headers: Record<string, string> = acme,
  session = sessionId,
): Promise<{ status: number; body: any }> {
  const response = await fetch(`${server.url}/api/v1/chat/sessions/${session}/attachments`, {
    method: 'POST',
    headers: { 'content-type': contentType, ...headers },
    body,
  });
  return { status: response.status, body: await response.json() };
}

/** Sends only the headers of a large upload: a 413 must come back without the body. */
function announce(bytes: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const url = new URL(`${server.url}/api/v1/chat/sessions/${sessionId}/attachments`);
    const outgoing = httpRequest(
      url,
      {
        method: 'POST',
        headers: { 'content-type': 'image/png', 'content-length': String(bytes), ...acme },
      },
      (response) => {
        let text = '';
        response.on('data', (chunk: Buffer) => (text += chunk.toString()));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
      },
    );
    outgoing.on('error', reject);
    outgoing.flushHeaders();
  });
}

describe('attachments (vision uploads)', () => {
  it('stores each image type and serves it back byte for byte to its tenant', async () => {
    for (const [mediaType, bytes] of Object.entries(images)) {
      const stored = await upload(bytes, `${mediaType}; name=x`);
      expect(stored.status).toBe(201);
      expect(stored.body).toEqual({
        attachment_id: expect.stringMatching(/^att_/),
        media_type: mediaType,
        bytes: bytes.byteLength,
      });
      const served = await fetch(
        `${server.url}/api/v1/chat/sessions/${sessionId}/attachments/${stored.body.attachment_id}`,
        { headers: acme },
      );
      expect(served.status).toBe(200);
      expect(served.headers.get('content-type')).toBe(mediaType);
      expect(served.headers.get('x-content-type-options')).toBe('nosniff');
      expect(Buffer.from(await served.arrayBuffer()).equals(bytes)).toBe(true);
      // another tenant: as if it did not exist
      const foreign = await fetch(
        `${server.url}/api/v1/chat/sessions/${sessionId}/attachments/${stored.body.attachment_id}`,
        { headers: globex },
      );
      expect(foreign.status).toBe(404);
      expect(((await foreign.json()) as { error: string }).error).toBe('not_found');
    }
  });

  it('names the images of a message in its journal event and in the transcript', async () => {
    const stored = await upload(png, 'image/png');
    expect(stored.status).toBe(201);
    const id = stored.body.attachment_id as string;
    const admitted = await request(
      server.url,
      'POST',
      '/api/v1/chat/turns',
      { session_id: sessionId, turn_id: 'with_image', message: 'look', attachments: [id] },
      acme,
    );
    expect(admitted.status).toBe(202);
    const plain = await request(
      server.url,
      'POST',
      '/api/v1/chat/turns',
      { session_id: sessionId, turn_id: 'without_image', message: 'plain' },
      acme,
    );
    expect(plain.status).toBe(202);
    const events = await readEvents(server.db, sessionId, 0, 1000);
    const posted = (turnId: string) =>
      (events.find((event) => event.type === 'message' && event.turn_id === turnId) as any)
        ?.message;
    expect(posted('with_image')).toMatchObject({ content: 'look', attachments: [id] });
    expect(posted('without_image')).not.toHaveProperty('attachments');
    const transcript = await request(
      server.url,
      'GET',
      `/api/v1/chat/sessions/${sessionId}/messages`,
      undefined,
      acme,
    );
    const said = (content: string) =>
      (transcript.body.items as any[]).find((item) => item.content === content);
    expect(said('look')).toMatchObject({ role: 'user', attachments: [id] });
    expect(said('plain')).not.toHaveProperty('attachments');
  });

  it('refuses a text file renamed .png (magic bytes), and a type that is not an image', async () => {
    const text = Buffer.from('just some text, not an image\n');
    const renamed = await upload(text, 'image/png');
    expect(renamed).toEqual({
      status: 415,
      body: { error: 'unsupported_media_type', message: 'the bytes are not a image/png image' },
    });
    const jpegAsPng = await upload(images['image/jpeg']!, 'image/png');
    expect(jpegAsPng.status).toBe(415);
    const plain = await upload(text, 'text/plain');
    expect(plain.status).toBe(415);
    expect(plain.body.error).toBe('unsupported_media_type');
    const svg = await upload(Buffer.from('<svg/>'), 'image/svg+xml');
    expect(svg.status).toBe(415);
    const empty = await upload(Buffer.alloc(0), 'image/png');
    expect(empty.status).toBe(400);
    expect(empty.body.error).toBe('invalid_request');
  });

  it('answers 413 to an upload over limits.attachment_bytes before reading its body', async () => {
    const announced = await announce(20 * 1024 * 1024);
    expect(announced.status).toBe(413);
    expect(JSON.parse(announced.body).error).toBe('payload_too_large');
    // without a Content-Length (chunked), reading stops at the limit
    const chunked = await fetch(`${server.url}/api/v1/chat/sessions/${sessionId}/attachments`, {
      method: 'POST',
      headers: { 'content-type': 'image/png', ...acme },
      body: new ReadableStream({
        start(controller) {
          controller.enqueue(png);
          controller.enqueue(new Uint8Array(8192));
          controller.close();
        },
      }),
      duplex: 'half',
    });
    expect(chunked.status).toBe(413);
  });

  it("answers 404 for another tenant's session or an unknown one, and writes nothing", async () => {
    const foreign = await upload(png, 'image/png', globex);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toBe('session_not_found');
    const unknown = await upload(png, 'image/png', acme, '01NOPE');
    expect(unknown.status).toBe(404);
    const count = await server.db.query<{ count: number }>(
      'select count(*)::int as count from attachments where tenant = $1',
      ['globex'],
    );
    expect(count.rows[0]?.count).toBe(0);
  });
});

describe('the contract', () => {
  it('lists the provider-side endpoints in the OpenAPI document', async () => {
    const openapi = await request(server.url, 'GET', '/api/v1/openapi.json');
    for (const path of [
      '/api/v1/models',
      '/api/v1/admin/models/sync',
      '/api/v1/usage',
      '/api/v1/chat/sessions/{session_id}/attachments',
      '/api/v1/chat/sessions/{session_id}/attachments/{attachment_id}',
    ]) {
      expect(openapi.body.paths[path], path).toBeDefined();
    }
  });
});

describe('the demo model with an image (CONFIG.md)', () => {
  const prompt = [
    {
      role: 'user' as const,
      content: [
        { type: 'text' as const, text: 'what is this?' },
        { type: 'file' as const, mediaType: 'image/png', data: new Uint8Array(png) },
      ],
    },
  ];
  const sink = { push: () => {}, flush: async () => {} };

  it('describes the image when its model id contains vision', async () => {
    const result = await streamStep(
      createDemoModel({ modelId: 'vision', delayMs: 0 }),
      prompt,
      sink,
      new AbortController().signal,
    );
    expect(result.text).toBe(`I see an image (image/png, ${png.byteLength} bytes).`);
  });

  it('says it cannot see images otherwise', async () => {
    const result = await streamStep(
      createDemoModel({ modelId: 'echo', delayMs: 0 }),
      prompt,
      sink,
      new AbortController().signal,
    );
    expect(result.text).toBe('I cannot see images.');
  });
});
