import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newPhotoId } from '../src/ids.js';
import { insertPhoto } from '../src/store/photos.js';
import { changedTables, fingerprint } from './support/fingerprint.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// The photo library (PROTOCOL.md, "Photos"), on the engine the suite runs on: uploads,
// copies of attachments, chat uploads landing in it, paging, and a library nobody but its
// owner sees. The API alone runs (no worker), so "nothing written" is the whole database.

const png = Buffer.concat([
  Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'),
  Buffer.alloc(40, 7),
]);
const jpeg = Buffer.concat([Buffer.from('ffd8ffe000104a464946', 'hex'), Buffer.alloc(30, 1)]);
const gif = Buffer.concat([Buffer.from('GIF89a', 'latin1'), Buffer.alloc(20, 2)]);

const limit = 1024 * 1024;
let server: TestServer;
const keys = {
  ann: 'ann-key',
  bob: 'bob-key',
  ada: 'ada-key',
  gus: 'gus-key',
  pat: 'pat-key',
};
const auth = (key: string) => ({ authorization: `Bearer ${key}` });

beforeAll(async () => {
  server = await startTestServer(
    {
      limits: { attachment_bytes: limit },
      auth: {
        keys: [
          { key_env: 'K_ANN', tenant: 'acme', user: 'ann', roles: [] },
          { key_env: 'K_BOB', tenant: 'acme', user: 'bob', roles: [] },
          { key_env: 'K_ADA', tenant: 'acme', user: 'ada', roles: ['admin'] },
          { key_env: 'K_GUS', tenant: 'globex', user: 'gus', roles: [] },
          { key_env: 'K_PAT', tenant: 'acme', user: 'pat', roles: [] },
        ],
      },
      agents: { default: { model: 'demo/echo', visibility: 'private' } },
    },
    { K_ANN: keys.ann, K_BOB: keys.bob, K_ADA: keys.ada, K_GUS: keys.gus, K_PAT: keys.pat },
    { api: true, worker: false },
  );
});
afterAll(async () => {
  await server?.close();
});

async function upload(
  body: Buffer,
  contentType: string,
  key = keys.ann,
  query = '',
): Promise<{ status: number; body: any }> {
  const response = await fetch(`${server.url}/api/v1/photos${query}`, {
    method: 'POST',
    headers: { 'content-type': contentType, ...auth(key) },
    body,
  });
  return { status: response.status, body: await response.json() };
}

/** Sends only the headers of a large upload: the 413 must come back without the body. */
function announce(bytes: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      new URL(`${server.url}/api/v1/photos`),
      {
        method: 'POST',
        headers: {
          'content-type': 'image/png',
          'content-length': String(bytes),
          ...auth(keys.ann),
        },
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

async function content(photoId: string, key = keys.ann) {
  const response = await fetch(`${server.url}/api/v1/photos/${photoId}/content`, {
    headers: auth(key),
  });
  return {
    status: response.status,
    headers: response.headers,
    bytes: Buffer.from(await response.arrayBuffer()),
  };
}

async function sessionOf(key: string): Promise<string> {
  const created = await request(server.url, 'POST', '/api/v1/chat/sessions', {}, auth(key));
  expect(created.status).toBe(201);
  return created.body.session_id as string;
}

async function chatUpload(
  sessionId: string,
  body: Buffer,
  type: string,
  key = keys.ann,
  headers: Record<string, string> = {},
) {
  const response = await fetch(`${server.url}/api/v1/chat/sessions/${sessionId}/attachments`, {
    method: 'POST',
    headers: { 'content-type': type, ...auth(key), ...headers },
    body,
  });
  return { status: response.status, body: (await response.json()) as any };
}

async function all(key: string, query = ''): Promise<any[]> {
  const listed = await request(
    server.url,
    'GET',
    `/api/v1/photos?limit=200${query}`,
    undefined,
    auth(key),
  );
  expect(listed.status).toBe(200);
  return listed.body.items;
}

describe('the photo library', () => {
  it('takes a raw upload and lists, shows, serves, renames and deletes it', async () => {
    const made = await upload(png, 'image/png; name=x.png', keys.ann, '?title=Sunset');
    expect(made.status).toBe(201);
    const id = made.body.photo_id as string;
    expect(made.body).toEqual({
      photo_id: expect.stringMatching(/^ph_/),
      owner: 'ann',
      origin: 'upload',
      title: 'Sunset',
      source: {},
      media_type: 'image/png',
      size: png.byteLength,
      created_at: expect.any(String),
      updated_at: made.body.created_at,
      content_url: `/api/v1/photos/${id}/content`,
    });

    expect((await all(keys.ann)).map((photo) => photo.photo_id)).toContain(id);
    const shown = await request(
      server.url,
      'GET',
      `/api/v1/photos/${id}`,
      undefined,
      auth(keys.ann),
    );
    expect(shown).toMatchObject({ status: 200, body: made.body });

    const served = await content(id);
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toBe('image/png');
    expect(served.headers.get('x-content-type-options')).toBe('nosniff');
    expect(served.bytes.equals(png)).toBe(true);
    const viaUrl = await fetch(`${server.url}${made.body.content_url}`, {
      headers: auth(keys.ann),
    });
    expect(Buffer.from(await viaUrl.arrayBuffer()).equals(png)).toBe(true);

    const renamed = await request(
      server.url,
      'PATCH',
      `/api/v1/photos/${id}`,
      { title: 'Dusk' },
      auth(keys.ann),
    );
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ photo_id: id, title: 'Dusk', size: png.byteLength });
    expect(Date.parse(renamed.body.updated_at)).toBeGreaterThanOrEqual(
      Date.parse(made.body.created_at),
    );
    const cleared = await request(
      server.url,
      'PATCH',
      `/api/v1/photos/${id}`,
      { title: null },
      auth(keys.ann),
    );
    expect(cleared.body.title).toBeNull();
    const badTitle = await request(
      server.url,
      'PATCH',
      `/api/v1/photos/${id}`,
      { title: '' },
      auth(keys.ann),
    );
    expect(badTitle.status).toBe(400);
    expect(badTitle.body.error).toBe('invalid_request');

    const deleted = await request(
      server.url,
      'DELETE',
      `/api/v1/photos/${id}`,
      undefined,
      auth(keys.ann),
    );
    expect(deleted.status).toBe(204);
    const gone = await request(
      server.url,
      'GET',
      `/api/v1/photos/${id}`,
      undefined,
      auth(keys.ann),
    );
    expect(gone).toMatchObject({ status: 404, body: { error: 'photo_not_found' } });
    expect((await content(id)).status).toBe(404);
    const again = await request(
      server.url,
      'DELETE',
      `/api/v1/photos/${id}`,
      undefined,
      auth(keys.ann),
    );
    expect(again.status).toBe(404);
    expect((await all(keys.ann)).map((photo) => photo.photo_id)).not.toContain(id);
  });

  it('copies an attachment the caller may see, and only such an attachment', async () => {
    const sessionId = await sessionOf(keys.ann);
    const attached = await chatUpload(sessionId, jpeg, 'image/jpeg');
    expect(attached.status).toBe(201);
    const attachmentId = attached.body.attachment_id as string;

    const copied = await request(
      server.url,
      'POST',
      '/api/v1/photos',
      { attachment_id: attachmentId, title: 'Copy' },
      auth(keys.ann),
    );
    expect(copied.status).toBe(201);
    expect(copied.body).toMatchObject({
      owner: 'ann',
      origin: 'upload',
      title: 'Copy',
      source: { session_id: sessionId, attachment_id: attachmentId },
      media_type: 'image/jpeg',
      size: jpeg.byteLength,
    });
    expect((await content(copied.body.photo_id)).bytes.equals(jpeg)).toBe(true);

    // bob may not see ann's private session; gus is another tenant; neither can copy it,
    // and the answer is the one a missing attachment gets.
    const before = await fingerprint(server.db);
    const missing = await request(
      server.url,
      'POST',
      '/api/v1/photos',
      { attachment_id: 'att_missing' },
      auth(keys.bob),
    );
    expect(missing.status).toBe(404);
    expect(missing.body.error).toBe('attachment_not_found');
    for (const key of [keys.bob, keys.gus]) {
      const refused = await request(
        server.url,
        'POST',
        '/api/v1/photos',
        { attachment_id: attachmentId },
        auth(key),
      );
      expect(refused).toMatchObject({ status: 404, body: missing.body });
    }
    const unknownField = await request(
      server.url,
      'POST',
      '/api/v1/photos',
      { attachment_id: attachmentId, extra: 1 },
      auth(keys.ann),
    );
    expect(unknownField.status).toBe(400);
    expect(unknownField.body.error).toBe('invalid_request');
    const malformed = await upload(Buffer.from('{"attachment_id":'), 'application/json');
    expect(malformed.status).toBe(400);
    expect(malformed.body.error).toBe('malformed_json');
    expect(changedTables(before, await fingerprint(server.db))).toEqual([]);
  });

  it('gets every chat upload, which stays when its session is deleted', async () => {
    const sessionId = await sessionOf(keys.ann);
    const attached = await chatUpload(sessionId, gif, 'image/gif');
    expect(attached.status).toBe(201);
    const landed = (await all(keys.ann)).find(
      (photo) => photo.source.attachment_id === attached.body.attachment_id,
    );
    expect(landed).toMatchObject({
      owner: 'ann',
      origin: 'upload',
      title: null,
      source: { session_id: sessionId, attachment_id: attached.body.attachment_id },
      media_type: 'image/gif',
      size: gif.byteLength,
    });
    const attachment = await fetch(
      `${server.url}/api/v1/chat/sessions/${sessionId}/attachments/${attached.body.attachment_id}`,
      { headers: auth(keys.ann) },
    );
    expect(Buffer.from(await attachment.arrayBuffer()).equals(gif)).toBe(true);

    // A refused chat upload lands nowhere.
    const refused = await chatUpload(sessionId, Buffer.from('not a gif'), 'image/gif');
    expect(refused.status).toBe(415);
    const landedNow = (await all(keys.ann)).filter(
      (photo) => photo.source.session_id === sessionId,
    );
    expect(landedNow).toHaveLength(1);

    const deleted = await request(
      server.url,
      'DELETE',
      `/api/v1/chat/sessions/${sessionId}`,
      undefined,
      auth(keys.ann),
    );
    expect(deleted.status).toBe(204);
    const kept = await request(
      server.url,
      'GET',
      `/api/v1/photos/${landed.photo_id}`,
      undefined,
      auth(keys.ann),
    );
    expect(kept.status).toBe(200);
    expect((await content(landed.photo_id)).bytes.equals(gif)).toBe(true);
  });

  it("attaches one of the caller's photos to a session without adding it again", async () => {
    const added = await upload(jpeg, 'image/jpeg', keys.ann, '?title=Shelf');
    expect(added.status).toBe(201);
    const before = (await all(keys.ann)).length;
    const sessionId = await sessionOf(keys.ann);
    const photoBody = (photoId: string) => Buffer.from(JSON.stringify({ photo_id: photoId }));
    const attached = await chatUpload(
      sessionId,
      photoBody(added.body.photo_id),
      'application/json',
    );
    expect(attached.status).toBe(201);
    expect(attached.body).toMatchObject({ media_type: 'image/jpeg', bytes: jpeg.byteLength });
    const served = await fetch(
      `${server.url}/api/v1/chat/sessions/${sessionId}/attachments/${attached.body.attachment_id}`,
      { headers: auth(keys.ann) },
    );
    expect(Buffer.from(await served.arrayBuffer()).equals(jpeg)).toBe(true);
    expect(await all(keys.ann)).toHaveLength(before);
    // The attachment is the turn's like an upload: admitted with the message.
    const turn = await request(
      server.url,
      'POST',
      '/api/v1/chat/turns',
      {
        session_id: sessionId,
        turn_id: 'photo_turn',
        message: 'what is this?',
        attachments: [attached.body.attachment_id],
      },
      auth(keys.ann),
    );
    expect(turn.status).toBe(202);

    // Another user's photo (bob's session, ann's photo), a missing one, a bad body: refused,
    // nothing attached.
    const bobSession = await sessionOf(keys.bob);
    const count = async (session: string) =>
      (
        await server.db.query<{ n: number }>(
          'select count(*)::int as n from attachments where session_id = $1',
          [session],
        )
      ).rows[0]?.n;
    const notBobs = await chatUpload(
      bobSession,
      photoBody(added.body.photo_id),
      'application/json',
      keys.bob,
    );
    expect(notBobs.status).toBe(404);
    expect(notBobs.body.error).toBe('photo_not_found');
    const missing = await chatUpload(sessionId, photoBody('ph_missing'), 'application/json');
    expect(missing.body.error).toBe('photo_not_found');
    const extra = await chatUpload(
      sessionId,
      Buffer.from(JSON.stringify({ photo_id: added.body.photo_id, bytes: 1 })),
      'application/json',
    );
    expect(extra.status).toBe(400);
    const broken = await chatUpload(sessionId, Buffer.from('{"photo_id":'), 'application/json');
    expect(broken.status).toBe(400);
    expect(await count(bobSession)).toBe(0);
    expect(await count(sessionId)).toBe(1);
  });

  it('stores an upload retried with its Idempotency-Key once, and refuses the key for other bytes', async () => {
    const sessionId = await sessionOf(keys.ann);
    const rows = async () =>
      (
        await server.db.query<{ attachments: number; photos: number }>(
          `select (select count(*)::int from attachments where session_id = $1) as attachments,
                  (select count(*)::int from photos where source->>'session_id' = $1) as photos`,
          [sessionId],
        )
      ).rows[0];
    const keyed = (key: string) => ({ 'idempotency-key': key });
    // Sent twice at once, then once more: one attachment, one photo, one id.
    const answers = await Promise.all([
      chatUpload(sessionId, png, 'image/png', keys.ann, keyed('upload-1')),
      chatUpload(sessionId, png, 'image/png', keys.ann, keyed('upload-1')),
    ]);
    const again = await chatUpload(sessionId, png, 'image/png', keys.ann, keyed('upload-1'));
    for (const answer of [...answers, again]) expect(answer.status).toBe(201);
    const ids = new Set([...answers, again].map((answer) => answer.body.attachment_id));
    expect(ids.size).toBe(1);
    expect(await rows()).toEqual({ attachments: 1, photos: 1 });
    // The same key for other bytes: refused, nothing stored; a bad key: refused.
    const other = await chatUpload(sessionId, gif, 'image/gif', keys.ann, keyed('upload-1'));
    expect(other.status).toBe(409);
    expect(other.body.error).toBe('idempotency_conflict');
    const bad = await chatUpload(sessionId, png, 'image/png', keys.ann, keyed('no spaces'));
    expect(bad.status).toBe(400);
    expect(bad.body.field).toBe('Idempotency-Key');
    // Another user's same key is another upload; a photo attached by key, once.
    const photo = await upload(jpeg, 'image/jpeg', keys.ann, '');
    const json = Buffer.from(JSON.stringify({ photo_id: photo.body.photo_id }));
    const first = await chatUpload(
      sessionId,
      json,
      'application/json',
      keys.ann,
      keyed('attach-1'),
    );
    const second = await chatUpload(
      sessionId,
      json,
      'application/json',
      keys.ann,
      keyed('attach-1'),
    );
    expect(second.body.attachment_id).toBe(first.body.attachment_id);
    expect(await rows()).toEqual({ attachments: 2, photos: 1 });

    // The library's own upload: the same key answers the same photo.
    const before = (await all(keys.ann)).length;
    const sent = (body: Buffer, type: string) =>
      fetch(`${server.url}/api/v1/photos?title=Keyed`, {
        method: 'POST',
        headers: { 'content-type': type, ...auth(keys.ann), ...keyed('photo-1') },
        body,
      }).then(async (response) => ({
        status: response.status,
        body: (await response.json()) as any,
      }));
    const made = await sent(gif, 'image/gif');
    const remade = await sent(gif, 'image/gif');
    expect(made.status).toBe(201);
    expect(remade.body.photo_id).toBe(made.body.photo_id);
    expect((await sent(png, 'image/png')).body.error).toBe('idempotency_conflict');
    expect(await all(keys.ann)).toHaveLength(before + 1);
  });

  it('lists newest first, page by page, of one origin when asked', async () => {
    // A user of its own, so the listing holds exactly what this test made.
    const owner = 'pat'; // generated photos come from the store, as image generation adds them
    const made: { id: string; origin: 'upload' | 'generated' }[] = [];
    for (let index = 0; index < 7; index++) {
      const origin = index % 3 === 1 ? 'generated' : 'upload';
      const photo = await insertPhoto(server.db, {
        photoId: newPhotoId(),
        tenant: 'acme',
        owner,
        origin,
        title: `#${index}`,
        source: origin === 'generated' ? { model: 'demo/image', prompt: `p${index}` } : {},
        mediaType: 'image/png',
        bytes: png,
      });
      made.push({ id: photo.photo_id, origin });
    }
    // Inserting an id again is a no-op that answers the stored row.
    const replay = await insertPhoto(server.db, {
      photoId: made[0]!.id,
      tenant: 'acme',
      owner,
      origin: 'generated',
      title: 'other',
      source: {},
      mediaType: 'image/gif',
      bytes: gif,
    });
    expect(replay).toMatchObject({ photo_id: made[0]!.id, origin: 'upload', title: '#0' });

    const newest = made.map((photo) => photo.id).reverse();
    const pageThrough = async (origin: string) => {
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const query: string = `?limit=2${origin ? `&origin=${origin}` : ''}${cursor ? `&cursor=${cursor}` : ''}`;
        const listed = await request(
          server.url,
          'GET',
          `/api/v1/photos${query}`,
          undefined,
          auth(keys.pat),
        );
        expect(listed.status).toBe(200);
        expect(listed.body.items.length).toBeLessThanOrEqual(2);
        seen.push(...listed.body.items.map((photo: { photo_id: string }) => photo.photo_id));
        cursor = listed.body.next_cursor;
      } while (cursor);
      return seen;
    };
    expect(await pageThrough('')).toEqual(newest);
    expect(await pageThrough('generated')).toEqual(
      made
        .filter((photo) => photo.origin === 'generated')
        .map((photo) => photo.id)
        .reverse(),
    );
    expect(await pageThrough('upload')).toEqual(
      made
        .filter((photo) => photo.origin === 'upload')
        .map((photo) => photo.id)
        .reverse(),
    );
    // Cursors this server never made: a rolled-over day, year 0 (PostgreSQL refuses both).
    for (const parts of [
      ['2026-02-30T00:00:00.000Z', made[0]!.id],
      ['0000-01-01T00:00:00.000Z', made[0]!.id],
      ['2026-01-01T00:00:00Z', made[0]!.id],
      [1, 2],
    ]) {
      const cursor = Buffer.from(JSON.stringify(parts)).toString('base64url');
      const refused = await request(
        server.url,
        'GET',
        `/api/v1/photos?cursor=${cursor}`,
        undefined,
        auth(keys.pat),
      );
      expect(refused.status, JSON.stringify(parts)).toBe(400);
      expect(refused.body.error).toBe('invalid_cursor');
    }
    const badCursor = await request(
      server.url,
      'GET',
      '/api/v1/photos?cursor=nope',
      undefined,
      auth(keys.ann),
    );
    expect(badCursor.status).toBe(400);
    expect(badCursor.body.error).toBe('invalid_cursor');
    const badOrigin = await request(
      server.url,
      'GET',
      '/api/v1/photos?origin=stolen',
      undefined,
      auth(keys.ann),
    );
    expect(badOrigin.status).toBe(400);
  });

  it('refuses 10 MB over limits.attachment_bytes (413) and bytes not of their type (415), writing nothing', async () => {
    const before = await fingerprint(server.db);
    // A Content-Length of 10 MB: refused before the body is read.
    const announced = await announce(10 * 1024 * 1024);
    expect(announced.status).toBe(413);
    expect(JSON.parse(announced.body).error).toBe('payload_too_large');
    // Without a Content-Length (chunked), reading stops at the limit.
    const chunked = await fetch(`${server.url}/api/v1/photos`, {
      method: 'POST',
      headers: { 'content-type': 'image/png', ...auth(keys.ann) },
      body: new ReadableStream({
        start(controller) {
          controller.enqueue(png);
          for (let sent = 0; sent < 10 * 1024 * 1024; sent += 1024 * 1024) {
            controller.enqueue(new Uint8Array(1024 * 1024));
          }
          controller.close();
        },
      }),
      duplex: 'half',
    });
    expect(chunked.status).toBe(413);
    expect(((await chunked.json()) as { error: string }).error).toBe('payload_too_large');

    const renamed = await upload(Buffer.from('just some text, not an image\n'), 'image/png');
    expect(renamed).toMatchObject({ status: 415, body: { error: 'unsupported_media_type' } });
    expect((await upload(jpeg, 'image/png')).status).toBe(415);
    expect((await upload(Buffer.from('<svg/>'), 'image/svg+xml')).status).toBe(415);
    expect((await upload(Buffer.from('hello'), 'text/plain')).status).toBe(415);
    const empty = await upload(Buffer.alloc(0), 'image/png');
    expect(empty).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
    const badTitle = await upload(png, 'image/png', keys.ann, `?title=${'x'.repeat(201)}`);
    expect(badTitle).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
    expect(changedTables(before, await fingerprint(server.db))).toEqual([]);
  });

  it("answers another user's or tenant's photo exactly like a missing one", async () => {
    const made = await upload(png, 'image/png', keys.ann, '?title=Mine');
    expect(made.status).toBe(201);
    const id = made.body.photo_id as string;
    const missingId = 'ph_01J00000000000000000000000';
    const before = await fingerprint(server.db);
    const attempts: [string, string, unknown][] = [
      ['GET', '', undefined],
      ['GET', '/content', undefined],
      ['PATCH', '', { title: 'Theirs' }],
      ['DELETE', '', undefined],
    ];
    for (const [method, tail, body] of attempts) {
      const missing = await request(
        server.url,
        method,
        `/api/v1/photos/${missingId}${tail}`,
        body,
        auth(keys.ann),
      );
      expect(missing.status, `${method} ${tail}`).toBe(404);
      expect(missing.body).toEqual({ error: 'photo_not_found', message: 'no such photo' });
      // bob: same tenant; ada: an admin of it; gus: another tenant.
      for (const key of [keys.bob, keys.ada, keys.gus]) {
        const foreign = await request(
          server.url,
          method,
          `/api/v1/photos/${id}${tail}`,
          body,
          auth(key),
        );
        expect(foreign.status, `${method} ${tail} ${key}`).toBe(404);
        expect(foreign.body).toEqual(missing.body);
      }
    }
    for (const key of [keys.bob, keys.ada, keys.gus]) {
      expect((await all(key)).map((photo) => photo.photo_id)).not.toContain(id);
    }
    expect(changedTables(before, await fingerprint(server.db))).toEqual([]);
    const still = await request(
      server.url,
      'GET',
      `/api/v1/photos/${id}`,
      undefined,
      auth(keys.ann),
    );
    expect(still.body.title).toBe('Mine');
  });

  it('is in the OpenAPI document, raw and JSON bodies both', async () => {
    const openapi = await request(server.url, 'GET', '/api/v1/openapi.json');
    const create = openapi.body.paths['/api/v1/photos'].post;
    expect(Object.keys(create.requestBody.content).sort()).toEqual(
      ['application/json', 'image/gif', 'image/jpeg', 'image/png', 'image/webp'].sort(),
    );
    const attach = openapi.body.paths['/api/v1/chat/sessions/{session_id}/attachments'].post;
    expect(attach.requestBody.content['application/json']).toBeDefined();
    expect(attach.requestBody.content['image/png']).toBeDefined();
    for (const path of ['/api/v1/photos/{photo_id}', '/api/v1/photos/{photo_id}/content']) {
      expect(openapi.body.paths[path], path).toBeDefined();
    }
  });
});
