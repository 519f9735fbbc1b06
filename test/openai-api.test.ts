import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkJournalInvariants } from './support/invariants.js';
import { until } from './support/poll.js';
import { startTestServer, type TestServer } from './support/server.js';

// The OpenAI-compatible API (docs/protocols.md), driven by the official `openai` client
// pointed at `<parley>/openai/v1`, on the engine the suite runs on.

let server: TestServer;
let alice: OpenAI;
let bob: OpenAI;
let globex: OpenAI;
let lead: OpenAI;
/** Where images are fetched by URL: a local server on limits.remote_images.allow_hosts. */
let images: Server;
let imagesAt = '';
const png = Buffer.concat([
  Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'),
  Buffer.alloc(40, 7),
]);

beforeAll(async () => {
  images = createServer((request, response) => {
    if (request.url === '/cat.png')
      response.writeHead(200, { 'content-type': 'image/jpeg' }).end(png);
    else if (request.url === '/big.png') response.writeHead(200).end(Buffer.alloc(70_000, 1));
    else if (request.url === '/page')
      response.writeHead(200, { 'content-type': 'text/html' }).end('<p>hi</p>');
    else if (request.url === '/moved') response.writeHead(302, { location: '/cat.png' }).end();
    else response.writeHead(404).end();
  });
  await new Promise<void>((resolve) => images.listen(0, '127.0.0.1', resolve));
  imagesAt = `127.0.0.1:${(images.address() as AddressInfo).port}`;
  server = await startTestServer(
    {
      // A blocking request waits at most this long for its turn.
      server: { blocking_wait_ms: 1500 },
      // An image larger than this is refused (413), as an upload is.
      limits: {
        attachment_bytes: 65_536,
        remote_images: { allow_hosts: [imagesAt], allow_private: true },
      },
      auth: {
        keys: [
          { key_env: 'K_ALICE', tenant: 'acme', user: 'alice', roles: [] },
          { key_env: 'K_BOB', tenant: 'acme', user: 'bob', roles: [] },
          { key_env: 'K_GLOBEX', tenant: 'globex', user: 'gus', roles: [] },
          { key_env: 'K_LEAD', tenant: 'acme', user: 'lea', roles: ['lead'] },
        ],
      },
      agents: {
        default: { model: 'demo/echo', visibility: 'private' },
        helper: { model: 'demo/echo' },
        careful: { model: 'demo/echo', tools: { calculator: 'approve' }, approver_roles: ['lead'] },
        curious: { model: 'demo/echo', tools: { ask_user: 'allow' } },
        seer: { model: 'demo/vision', vision: 'always' },
      },
    },
    { K_ALICE: 'alice-key', K_BOB: 'bob-key', K_GLOBEX: 'globex-key', K_LEAD: 'lead-key' },
  );
  const client = (apiKey: string) =>
    new OpenAI({ baseURL: `${server.url}/openai/v1`, apiKey, maxRetries: 0 });
  alice = client('alice-key');
  bob = client('bob-key');
  globex = client('globex-key');
  lead = client('lead-key');
});
afterAll(async () => {
  if (server) {
    await checkJournalInvariants(server.db);
    await server.close();
  }
  images?.close();
});

describe('the OpenAI-compatible API with the official client', () => {
  it("lists the principal's agents as models", async () => {
    const models = await alice.models.list();
    expect(models.data.map((model) => model.id)).toEqual(
      expect.arrayContaining(['default', 'helper']),
    );
  });

  it('answers a response with the reply, its usage and its conversation (the session)', async () => {
    const response = await alice.responses.create({ model: 'helper', input: 'hello there' });
    expect(response.status).toBe('completed');
    expect(response.output_text).toBe('You said: hello there');
    expect(response.id).toMatch(/^resp_/);
    expect(response.usage?.output_tokens).toBeGreaterThan(0);
    const conversation = (response as unknown as { conversation: { id: string } }).conversation;
    expect(conversation.id).toMatch(/^sess_|^[A-Za-z0-9_-]+$/);

    // previous_response_id continues the same session; parley/NAME names the agent too.
    const next = await alice.responses.create({
      model: 'parley/helper',
      input: [{ role: 'user', content: 'and again' }],
      previous_response_id: response.id,
    });
    expect(next.output_text).toBe('You said: and again');
    expect((next as unknown as { conversation: { id: string } }).conversation.id).toBe(
      conversation.id,
    );
    const messages = await server.db.query<{ role: string; content: string }>(
      'select role, content from messages where session_id = $1 order by sequence',
      [conversation.id],
    );
    expect(messages.rows.filter((row) => row.role === 'user').map((row) => row.content)).toEqual([
      'hello there',
      'and again',
    ]);
  });

  it('streams Responses events in order, and their deltas make the final text', async () => {
    const stream = await alice.responses.create({
      model: 'default',
      input: 'stream this please',
      stream: true,
    });
    const events: { type: string; sequence_number: number; delta?: string }[] = [];
    for await (const event of stream) events.push(event);
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
    expect(events[0]?.type).toBe('response.created');
    expect(events.at(-1)?.type).toBe('response.completed');
    const text = events
      .filter((event) => event.type === 'response.output_text.delta')
      .map((event) => event.delta)
      .join('');
    expect(text).toBe('You said: stream this please');
    const completed = events.at(-1) as unknown as { response: { output_text?: string } };
    expect(JSON.stringify(completed.response)).toContain('You said: stream this please');
  });

  it('runs a background response; retrieve shows it and resumes its stream after any event', async () => {
    const started = await alice.responses.create({
      model: 'default',
      input: 'in the background',
      background: true,
    });
    expect(['queued', 'in_progress', 'completed']).toContain(started.status);
    let found = await alice.responses.retrieve(started.id);
    for (let tries = 0; found.status !== 'completed' && tries < 200; tries += 1) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      found = await alice.responses.retrieve(started.id);
    }
    expect(found.output_text).toBe('You said: in the background');

    const whole: { sequence_number: number; type: string }[] = [];
    for await (const event of await alice.responses.retrieve(started.id, { stream: true })) {
      whole.push(event);
    }
    const resumed: { sequence_number: number; type: string }[] = [];
    for await (const event of await alice.responses.retrieve(started.id, {
      stream: true,
      starting_after: 2,
    })) {
      resumed.push(event);
    }
    // Exactly the events after #2, the same as the first time.
    expect(resumed).toEqual(whole.filter((event) => event.sequence_number > 2));
    expect(resumed.at(-1)?.type).toBe('response.completed');
  });

  it('cancels a response durably: the turn ends cancelled', async () => {
    const started = await alice.responses.create({
      model: 'default',
      input: '/stall a long wait',
      background: true,
    });
    const cancelled = await alice.responses.cancel(started.id);
    expect(cancelled.status).toBe('cancelled');
    const turnId = started.id.slice('resp_'.length);
    const events = await server.db.query<{ type: string }>(
      `select type from events where type = 'cancelled' and coalesce(payload -> 'turn_ids', jsonb_build_array(turn_id)) ? $1`,
      [turnId],
    );
    expect(events.rowCount).toBe(1);
  });

  it("appends a request's instructions to the agent's for its turn only; metadata stays with the response", async () => {
    const first = await alice.responses.create({
      model: 'helper',
      input: 'hi',
      instructions: '/sign brief',
      metadata: { ticket: 'T-1' },
    });
    expect(first.output_text).toBe('You said: hi\n(signed: brief)');
    expect(first.instructions).toBe('/sign brief');
    expect(first.metadata).toEqual({ ticket: 'T-1' });
    const retrieved = await alice.responses.retrieve(first.id);
    expect(retrieved.instructions).toBe('/sign brief');
    expect(retrieved.metadata).toEqual({ ticket: 'T-1' });
    // The next response of the conversation has only the agent's instructions.
    const next = await alice.responses.create({
      model: 'helper',
      input: 'and now',
      previous_response_id: first.id,
    });
    expect(next.output_text).toBe('You said: and now');
    expect(next.instructions).toBeNull();
    // Instructions are part of what a retry must repeat.
    const key = 'oai_instructed_1';
    const once = await alice.responses.create(
      { model: 'helper', input: 'keyed', instructions: '/sign one' },
      { headers: { 'Idempotency-Key': key } },
    );
    expect(once.output_text).toBe('You said: keyed\n(signed: one)');
    const other = await alice.responses
      .create(
        { model: 'helper', input: 'keyed', instructions: '/sign two' },
        { headers: { 'Idempotency-Key': key } },
      )
      .then(
        () => null,
        (caught: unknown) => caught as InstanceType<typeof OpenAI.APIError>,
      );
    expect(other?.status).toBe(409);
    expect(other?.code).toBe('turn_conflict');
    // More than 16 metadata pairs is refused, nothing admitted.
    const many = Object.fromEntries(Array.from({ length: 17 }, (_, index) => [`k${index}`, 'v']));
    const refused = await alice.responses
      .create({ model: 'helper', input: 'too much', metadata: many })
      .then(
        () => null,
        (caught: unknown) => caught as InstanceType<typeof OpenAI.APIError>,
      );
    expect(refused?.status).toBe(400);
  });

  it('takes images in input as attachments of the turn (once, also on a retry); refuses what an upload refuses', async () => {
    const input = (imageUrl: string) => [
      {
        role: 'user' as const,
        content: [
          { type: 'input_text' as const, text: 'what is this?' },
          { type: 'input_image' as const, image_url: imageUrl, detail: 'auto' as const },
        ],
      },
    ];
    const key = { headers: { 'Idempotency-Key': 'oai_image_1' } };
    const body = { model: 'seer', input: input(`data:image/png;base64,${png.toString('base64')}`) };
    const seen = await alice.responses.create(body, key);
    expect(seen.output_text).toBe(`I see an image (image/png, ${png.length} bytes).`);
    expect((await alice.responses.create(body, key)).id).toBe(seen.id);
    const conversation = (seen as unknown as { conversation: { id: string } }).conversation.id;
    const stored = await server.db.query<{ media_type: string; bytes: number }>(
      'select media_type, bytes from attachments where session_id = $1',
      [conversation],
    );
    expect(stored.rows).toEqual([{ media_type: 'image/png', bytes: png.length }]);

    // By URL, from an allowed host: fetched, and what its bytes are (not the declared type).
    const fetched = await alice.responses.create({
      model: 'seer',
      input: input(`http://${imagesAt}/cat.png`),
    });
    expect(fetched.output_text).toBe(`I see an image (image/png, ${png.length} bytes).`);

    const turns = async () =>
      (await server.db.query<{ n: number }>('select count(*)::int as n from turns')).rows[0]?.n;
    const before = await turns();
    const refusals: [string, number][] = [
      // Not on limits.remote_images.allow_hosts; a redirect (not followed); not an image;
      // missing; too large; not a URL.
      ['https://example.com/cat.png', 400],
      [`http://${imagesAt}/moved`, 400],
      [`http://${imagesAt}/page`, 415],
      [`http://${imagesAt}/missing.png`, 400],
      [`http://${imagesAt}/big.png`, 413],
      ['file:///etc/passwd', 400],
      [`data:image/png;base64,${Buffer.from('not a png at all').toString('base64')}`, 415],
      ['data:text/plain;base64,aGVsbG8=', 415],
      [`data:image/png;base64,${Buffer.alloc(70_000, 1).toString('base64')}`, 413],
    ];
    for (const [imageUrl, status] of refusals) {
      const refused = await alice.responses.create({ model: 'seer', input: input(imageUrl) }).then(
        () => null,
        (caught: unknown) => caught as InstanceType<typeof OpenAI.APIError>,
      );
      expect(refused?.status, imageUrl.slice(0, 40)).toBe(status);
    }
    expect(await turns()).toBe(before);
  });

  it("keeps files in the caller's photo library and takes them by file_id in a turn's input", async () => {
    const uploaded = await alice.files.create({
      file: await toFile(png, 'cat.png'),
      purpose: 'vision',
    });
    expect(uploaded).toMatchObject({
      object: 'file',
      bytes: png.length,
      filename: 'cat.png',
      purpose: 'vision',
      status: 'processed',
    });
    // A file is a photo of the library: its id is the photo's.
    const photo = await server.db.query(
      'select tenant, owner, media_type, title from photos where photo_id = $1',
      [uploaded.id],
    );
    expect(photo.rows).toEqual([
      { tenant: 'acme', owner: 'alice', media_type: 'image/png', title: 'cat.png' },
    ]);
    expect(await alice.files.retrieve(uploaded.id)).toEqual(uploaded);
    const content = await alice.files.content(uploaded.id);
    expect(content.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await content.arrayBuffer()).equals(png)).toBe(true);
    const gif = Buffer.concat([Buffer.from('GIF89a'), Buffer.alloc(20, 1)]);
    const second = await alice.files.create({
      file: await toFile(gif, 'anim.gif'),
      purpose: 'user_data',
    });
    expect(second).toMatchObject({ purpose: 'user_data', bytes: gif.length });
    // Newest first, one per page: the SDK pages on with `after`.
    const listed: string[] = [];
    for await (const file of alice.files.list({ limit: 1 })) listed.push(file.id);
    expect(listed.slice(0, 2)).toEqual([second.id, uploaded.id]);
    expect((await bob.files.list()).data.map((file) => file.id)).not.toContain(uploaded.id);
    // A retry under the same Idempotency-Key stores nothing again.
    const keyed = { headers: { 'Idempotency-Key': 'oai_file_1' } };
    const again = async () =>
      alice.files.create({ file: await toFile(gif, 'again.gif'), purpose: 'vision' }, keyed);
    const stored = async () =>
      (await server.db.query<{ n: number }>('select count(*)::int as n from photos')).rows[0]?.n;
    const once = await again();
    const afterOnce = await stored();
    expect((await again()).id).toBe(once.id);
    expect(await stored()).toBe(afterOnce);

    // A turn names the file: the model sees it as an inline image.
    const said = `I see an image (image/png, ${png.length} bytes).`;
    for (const part of [
      { type: 'input_image' as const, file_id: uploaded.id, detail: 'auto' as const },
      { type: 'input_file' as const, file_id: uploaded.id },
    ]) {
      const seen = await alice.responses.create({
        model: 'seer',
        input: [{ role: 'user', content: [{ type: 'input_text', text: 'what is this?' }, part] }],
      });
      expect(seen.output_text, part.type).toBe(said);
    }
    const chatted = await alice.chat.completions.create({
      model: 'seer',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'what is this?' },
            { type: 'file', file: { file_id: uploaded.id } },
          ],
        },
      ],
    });
    expect(chatted.choices[0]?.message.content).toBe(said);

    const failed = (call: Promise<unknown>) =>
      call.then(
        () => null,
        (caught: unknown) => caught as InstanceType<typeof OpenAI.APIError>,
      );
    const count = async (table: string) =>
      (await server.db.query<{ n: number }>(`select count(*)::int as n from ${table}`)).rows[0]?.n;
    const photos = await count('photos');
    const turns = await count('turns');
    // Not an image, another purpose, too large: refused, nothing stored.
    const refusals: [() => Promise<unknown>, number, string][] = [
      [
        async () =>
          alice.files.create({
            file: await toFile(Buffer.from('%PDF-1.7'), 'a.pdf'),
            purpose: 'vision',
          }),
        400,
        'unsupported_file',
      ],
      [
        async () =>
          alice.files.create({ file: await toFile(png, 'cat.png'), purpose: 'fine-tune' }),
        400,
        'invalid_request',
      ],
      [
        async () =>
          alice.files.create({
            file: await toFile(Buffer.alloc(70_000, 1), 'big.png'),
            purpose: 'vision',
          }),
        413,
        'payload_too_large',
      ],
    ];
    // Another user's or tenant's file is missing, to the Files routes and to a turn.
    for (const other of [bob, globex]) {
      refusals.push(
        [() => other.files.retrieve(uploaded.id), 404, 'file_not_found'],
        [() => other.files.content(uploaded.id), 404, 'file_not_found'],
        [() => other.files.delete(uploaded.id), 404, 'file_not_found'],
        [
          () =>
            other.responses.create({
              model: 'default',
              input: [
                {
                  role: 'user',
                  content: [
                    { type: 'input_text', text: 'look' },
                    { type: 'input_image', file_id: uploaded.id, detail: 'auto' },
                  ],
                },
              ],
            }),
          400,
          'unknown_file',
        ],
      );
    }
    refusals.push([
      () =>
        alice.chat.completions.create({
          model: 'seer',
          messages: [
            {
              role: 'user',
              content: [
                { type: 'text', text: 'look' },
                { type: 'file', file: { file_id: 'ph_nothing_here' } },
              ],
            },
          ],
        }),
      400,
      'unknown_file',
    ]);
    for (const [index, [call, status, code]] of refusals.entries()) {
      const error = await failed(call());
      expect(error?.status, `${index} ${code}`).toBe(status);
      expect(error?.code, `${index} ${code}`).toBe(code);
    }
    // Not a form, or a body past the limit and the form's room: refused before it is read.
    const raw = (contentType: string, body: string) =>
      fetch(`${server.url}/openai/v1/files`, {
        method: 'POST',
        headers: { authorization: 'Bearer alice-key', 'content-type': contentType },
        body,
      }).then(async (answer) => [answer.status, ((await answer.json()) as any).error?.code]);
    expect(await raw('application/json', '{}')).toEqual([415, 'unsupported_media_type']);
    expect(await raw('multipart/form-data; boundary=x', 'x'.repeat(100_000))).toEqual([
      413,
      'payload_too_large',
    ]);
    expect(await raw('multipart/form-data; boundary=x', '--x\r\n')).toEqual([
      400,
      'invalid_request',
    ]);
    expect(await count('photos')).toBe(photos);
    expect(await count('turns')).toBe(turns);

    expect(await alice.files.delete(second.id)).toEqual({
      id: second.id,
      object: 'file',
      deleted: true,
    });
    expect((await failed(alice.files.retrieve(second.id)))?.status).toBe(404);
    expect((await failed(alice.files.delete(second.id)))?.status).toBe(404);
  });

  it('deletes a response: its id is gone, its turn stays in the conversation, a running one is cancelled', async () => {
    const done = await alice.responses.create({ model: 'helper', input: 'keep my words' });
    const conversation = (done as unknown as { conversation: { id: string } }).conversation.id;
    const deleted = await alice.responses.delete(done.id);
    expect(deleted as unknown).toEqual({ id: done.id, object: 'response', deleted: true });
    const missing = (call: Promise<unknown>) =>
      call.then(
        () => null,
        (caught: unknown) => (caught as InstanceType<typeof OpenAI.APIError>).status,
      );
    expect(await missing(alice.responses.retrieve(done.id))).toBe(404);
    expect(await missing(alice.responses.delete(done.id))).toBe(404);
    expect(
      await missing(
        alice.responses.create({ model: 'helper', input: 'on', previous_response_id: done.id }),
      ),
    ).toBe(404);
    // The conversation goes on, the deleted response's turn in its history.
    const later = await alice.responses.create({
      model: 'helper',
      input: 'still here',
      conversation,
    });
    expect(later.output_text).toBe('You said: still here');
    const messages = await server.db.query<{ content: string }>(
      "select content from messages where session_id = $1 and role = 'user' order by sequence",
      [conversation],
    );
    expect(messages.rows.map((row) => row.content)).toEqual(['keep my words', 'still here']);
    // Another tenant cannot delete it (it is as missing as a missing one).
    const running = await alice.responses.create({
      model: 'default',
      input: '/stall forever',
      background: true,
    });
    expect(await missing(globex.responses.delete(running.id))).toBe(404);
    await alice.responses.delete(running.id);
    const turnId = running.id.slice('resp_'.length);
    await until(
      () =>
        server.db.query<{ state: string }>('select state from turns where turn_id = $1', [turnId]),
      (found) => found.rows[0]?.state === 'cancelled',
      'the deleted running response cancelled',
    );
  });

  it('ends a stream whose session is deleted while it waits for the turn', async () => {
    const stream = await alice.responses.create({
      model: 'default',
      input: '/stall forever',
      stream: true,
    });
    const seen: string[] = [];
    for await (const event of stream) {
      seen.push(event.type);
      if (event.type !== 'response.created') continue;
      const sessionId = (event.response as unknown as { conversation: { id: string } }).conversation
        .id;
      const deleted = await fetch(`${server.url}/api/v1/chat/sessions/${sessionId}`, {
        method: 'DELETE',
        headers: { authorization: 'Bearer alice-key' },
      });
      expect(deleted.status).toBe(204);
    }
    // The stream ended with the session (it neither hangs nor spins on a journal that is
    // gone); the turn never got to answer.
    expect(seen[0]).toBe('response.created');
    expect(seen).not.toContain('response.completed');
  });

  it('a blocking request whose turn outlives server.blocking_wait_ms answers it as it stands', async () => {
    const waited = await alice.responses.create({ model: 'default', input: '/stall forever' });
    expect(waited.status).toBe('in_progress');
    const pending = await alice.chat.completions
      .create({ model: 'default', messages: [{ role: 'user', content: '/stall forever' }] })
      .then(
        () => null,
        (caught: unknown) => caught as InstanceType<typeof OpenAI.APIError>,
      );
    expect(pending?.status).toBe(504);
    expect(pending?.code).toBe('turn_pending');
    // The turn goes on until cancelled.
    expect((await alice.responses.cancel(waited.id)).status).toBe('cancelled');
    const chatTurn = String(pending?.message.match(/resp_[A-Za-z0-9_-]+/)?.[0]);
    expect((await alice.responses.cancel(chatTurn)).status).toBe('cancelled');
  });

  it('an Idempotency-Key is the turn id: a retry is the same response, admitted once', async () => {
    const key = `oai_key_${Date.now()}`;
    const first = await alice.responses.create(
      { model: 'default', input: 'only once' },
      { headers: { 'Idempotency-Key': key } },
    );
    const again = await alice.responses.create(
      { model: 'default', input: 'only once' },
      { headers: { 'Idempotency-Key': key } },
    );
    expect(first.id).toBe(`resp_${key}`);
    expect(again.id).toBe(first.id);
    expect(again.output_text).toBe('You said: only once');
    const turns = await server.db.query('select 1 from turns where turn_id = $1', [key]);
    expect(turns.rowCount).toBe(1);
  });

  it('answers Chat Completions as one-turn sessions, the history folded into the message', async () => {
    const single = await alice.chat.completions.create({
      model: 'helper',
      messages: [{ role: 'user', content: 'just this' }],
    });
    expect(single.object).toBe('chat.completion');
    expect(single.choices[0]?.message.content).toBe('You said: just this');
    expect(single.choices[0]?.finish_reason).toBe('stop');
    expect(single.usage?.completion_tokens).toBeGreaterThan(0);

    const history = await alice.chat.completions.create({
      model: 'helper',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'hello!' },
        { role: 'user', content: 'what now?' },
      ],
    });
    expect(history.choices[0]?.message.content).toMatch(/^You said: The conversation so far:/);
    const admitted = await server.db.query<{ content: string }>(
      `select content from messages where turn_id = $1 and role = 'user'`,
      [history.id.slice('chatcmpl_'.length)],
    );
    expect(admitted.rows[0]?.content).toBe(
      'The conversation so far:\n> system: Be brief.\n> user: hi\n> assistant: hello!\n\nwhat now?',
    );
    // Stateless: each completion is a session of its own.
    const sessions = await server.db.query<{ session_id: string }>(
      'select session_id from turns where turn_id = any($1)',
      [[single.id, history.id].map((id) => id.slice('chatcmpl_'.length))],
    );
    expect(new Set(sessions.rows.map((row) => row.session_id)).size).toBe(2);

    const stream = await alice.chat.completions.create({
      model: 'helper',
      messages: [{ role: 'user', content: 'stream it' }],
      stream: true,
    });
    let text = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(text).toBe('You said: stream it');
    expect(finish).toBe('stop');

    const failed = await alice.chat.completions
      .create({ model: 'helper', messages: [{ role: 'user', content: '/fail permanent' }] })
      .then(
        () => null,
        (caught: unknown) => caught as InstanceType<typeof OpenAI.APIError>,
      );
    expect(failed?.status).toBe(502);
    expect(failed?.code).toBe('turn_failed');
  });

  it('shows a call waiting for approval as an mcp_approval_request, answered with mcp_approval_response', async () => {
    const waiting = await alice.responses.create({
      model: 'careful',
      input: '/tool calculator {"expression": "2+3"}',
    });
    expect(waiting.status).toBe('in_progress');
    const asked = waiting.output.find((item) => item.type === 'mcp_approval_request');
    expect(asked).toMatchObject({
      type: 'mcp_approval_request',
      name: 'calculator',
      arguments: JSON.stringify({ expression: '2+3' }),
    });
    const requestId = (asked as { id: string }).id;
    const approve = (by: OpenAI) =>
      by.responses.create({
        model: 'careful',
        previous_response_id: waiting.id,
        input: [{ type: 'mcp_approval_response', approval_request_id: requestId, approve: true }],
      });
    // The agent's approver roles apply as in Parley's inbox: alice may not, lea may.
    const refused = await approve(alice).then(
      () => null,
      (caught: unknown) => caught as InstanceType<typeof OpenAI.APIError>,
    );
    expect(refused?.status).toBe(403);
    expect(refused?.code).toBe('forbidden');
    const answered = await approve(lead);
    // The answer resumes the same turn: the same response, now ended.
    expect(answered.id).toBe(waiting.id);
    expect(answered.status).toBe('completed');
    expect(answered.output_text).toContain('5');
    // Answered once: a second answer is stale.
    const again = await approve(lead).then(
      () => null,
      (caught: unknown) => caught as InstanceType<typeof OpenAI.APIError>,
    );
    expect(again?.status).toBe(409);
  });

  it("runs the client's own function tools: a function_call item, answered with function_call_output", async () => {
    const tools = [
      {
        type: 'function' as const,
        name: 'get_weather',
        description: 'The weather in a city',
        parameters: { type: 'object', properties: { city: { type: 'string' } } },
        strict: false,
      },
    ];
    const waiting = await alice.responses.create({
      model: 'helper',
      input: '/tool get_weather {"city": "Paris"}',
      tools,
    });
    expect(waiting.status).toBe('in_progress');
    const call = waiting.output.find((item) => item.type === 'function_call');
    expect(call).toMatchObject({
      type: 'function_call',
      name: 'get_weather',
      arguments: JSON.stringify({ city: 'Paris' }),
    });
    const callId = (call as { call_id: string }).call_id;
    const give = (by: OpenAI, output: string) =>
      by.responses.create({
        model: 'helper',
        previous_response_id: waiting.id,
        input: [{ type: 'function_call_output', call_id: callId, output }],
      });
    // Only the user whose turn declared the tool answers its calls.
    const refused = await give(bob, 'rainy').then(
      () => null,
      (caught: unknown) => caught as InstanceType<typeof OpenAI.APIError>,
    );
    expect(refused?.status).toBe(403);
    const answered = await give(alice, 'sunny, 21 C');
    expect(answered.id).toBe(waiting.id);
    expect(answered.status).toBe('completed');
    expect(answered.output_text).toContain('sunny, 21 C');
    expect(answered.output.some((item) => item.type === 'function_call')).toBe(false);
    // The same output again is a retry (the same response); another is stale.
    expect((await give(alice, 'sunny, 21 C')).status).toBe('completed');
    const other = await give(alice, 'snow').then(
      () => null,
      (caught: unknown) => caught as InstanceType<typeof OpenAI.APIError>,
    );
    expect(other?.status).toBe(409);
    // A tool named like one of the agent's own is refused, nothing admitted.
    const turns = async () =>
      (await server.db.query<{ n: number }>('select count(*)::int as n from turns')).rows[0]?.n;
    const before = await turns();
    const clash = await alice.responses
      .create({
        model: 'careful',
        input: 'hello',
        tools: [{ ...(tools[0] as (typeof tools)[0]), name: 'calculator' }],
      })
      .then(
        () => null,
        (caught: unknown) => caught as InstanceType<typeof OpenAI.APIError>,
      );
    expect(clash?.status).toBe(400);
    expect(clash?.code).toBe('invalid_request');
    expect(await turns()).toBe(before);
  });

  it("hands Chat Completions' function calls to the client; its tool messages let the turn go on", async () => {
    const tools = [
      {
        type: 'function' as const,
        function: {
          name: 'get_weather',
          description: 'The weather in a city',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
        },
      },
    ];
    const asked = { role: 'user' as const, content: '/tool get_weather {"city": "Oslo"}' };
    const first = await alice.chat.completions.create({
      model: 'helper',
      messages: [asked],
      tools,
    });
    expect(first.choices[0]?.finish_reason).toBe('tool_calls');
    const call = first.choices[0]?.message.tool_calls?.[0] as {
      id: string;
      function: { name: string; arguments: string };
    };
    expect(call.function).toEqual({ name: 'get_weather', arguments: '{"city":"Oslo"}' });
    const history = [
      asked,
      first.choices[0]?.message as OpenAI.ChatCompletionMessageParam,
      { role: 'tool' as const, tool_call_id: call.id, content: 'snow, -3 C' },
    ];
    const second = await alice.chat.completions.create({
      model: 'helper',
      messages: history,
      tools,
    });
    expect(second.choices[0]?.finish_reason).toBe('stop');
    expect(second.choices[0]?.message.content).toContain('snow, -3 C');
    // The same turn went on: one turn, one session, its call answered by the output.
    expect(second.id).toBe(first.id);
    // Another user's client cannot answer it (its calls are its own).
    const foreign = await bob.chat.completions.create({ model: 'helper', messages: history }).then(
      () => null,
      (caught: unknown) => caught as InstanceType<typeof OpenAI.APIError>,
    );
    expect(foreign?.status).toBe(404);

    // Streamed: the call arrives as tool_calls deltas, the stream ends with [DONE].
    const streamed = await alice.chat.completions.create({
      model: 'helper',
      messages: [{ role: 'user', content: '/tool get_weather {"city": "Rome"}' }],
      tools,
      stream: true,
    });
    let finish: string | null = null;
    const deltas: unknown[] = [];
    for await (const chunk of streamed) {
      const choice = chunk.choices[0];
      if (choice?.delta.tool_calls) deltas.push(...choice.delta.tool_calls);
      if (choice?.finish_reason) finish = choice.finish_reason;
    }
    expect(finish).toBe('tool_calls');
    expect(deltas).toMatchObject([
      {
        index: 0,
        type: 'function',
        function: { name: 'get_weather', arguments: '{"city":"Rome"}' },
      },
    ]);
    const streamedId = (deltas[0] as { id: string }).id;
    const answered = await alice.chat.completions.create({
      model: 'helper',
      messages: [{ role: 'tool', tool_call_id: streamedId, content: 'sun' }],
      stream: true,
    });
    let text = '';
    for await (const chunk of answered) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toContain('sun');
  });

  it('answers a blocking request whose turn asks the person a question', async () => {
    const asking = await alice.responses.create({
      model: 'curious',
      input: '/tool ask_user {"question": "Which one?"}',
    });
    // Not an approval: no item for it, but the request does not wait for the answer.
    expect(asking.status).toBe('in_progress');
    expect(asking.output.some((item) => item.type === 'mcp_approval_request')).toBe(false);
    expect((await alice.responses.cancel(asking.id)).status).toBe('cancelled');
  });

  it("answers errors in OpenAI's shape with Parley's codes, writing nothing", async () => {
    const before = await server.db.query('select count(*)::int as n from turns');
    const failures: [() => Promise<unknown>, number, string][] = [
      [() => alice.responses.create({ model: 'nobody', input: 'hi' }), 404, 'unknown_agent'],
      [() => alice.responses.create({ model: 'default', input: '   ' }), 400, 'empty_message'],
      [
        () =>
          alice.responses.create({ model: 'default', input: 'hi', conversation: 'sess_missing' }),
        404,
        'session_not_found',
      ],
      [() => alice.responses.retrieve('resp_nothing_here'), 404, 'turn_not_found'],
      [
        () =>
          new OpenAI({
            baseURL: `${server.url}/openai/v1`,
            apiKey: 'wrong-key',
            maxRetries: 0,
          }).models.list(),
        401,
        'unauthorized',
      ],
    ];
    for (const [call, status, code] of failures) {
      const error = await call().then(
        () => null,
        (caught: unknown) => caught,
      );
      expect(error, code).toBeInstanceOf(OpenAI.APIError);
      expect((error as InstanceType<typeof OpenAI.APIError>).status, code).toBe(status);
      expect((error as InstanceType<typeof OpenAI.APIError>).code, code).toBe(code);
    }
    const after = await server.db.query('select count(*)::int as n from turns');
    expect(after.rows[0]).toEqual(before.rows[0]);
  });

  it("keeps tenants and owners apart: another's private response or conversation is missing", async () => {
    const mine = await alice.responses.create({ model: 'default', input: 'private' });
    const conversation = (mine as unknown as { conversation: { id: string } }).conversation.id;
    for (const other of [globex, bob]) {
      const seen = await other.responses.retrieve(mine.id).then(
        () => null,
        (caught: unknown) => caught as InstanceType<typeof OpenAI.APIError>,
      );
      expect(seen?.status).toBe(404);
      const joined = await other.responses
        .create({ model: 'default', input: 'let me in', conversation })
        .then(
          () => null,
          (caught: unknown) => caught as InstanceType<typeof OpenAI.APIError>,
        );
      expect(joined?.status).toBe(404);
    }
  });
});
