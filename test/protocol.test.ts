import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request, startTestServer, type TestServer } from './support/server.js';
import { SseClient } from './support/sse.js';
import { checkJournalInvariants } from './support/invariants.js';

let server: TestServer;
let counter = 0;
const turnId = () => `turn_${Date.now()}_${counter++}`;

beforeAll(async () => {
  server = await startTestServer({
    agents: {
      default: { model: 'demo/echo' },
      greeter: { model: 'demo/echo', greeting: 'Hello! How can I help?' },
    },
  });
});
afterAll(async () => {
  await checkJournalInvariants(server.db);
  await server.close();
});

async function admit(body: Record<string, unknown>) {
  return request(server.url, 'POST', '/api/v1/chat/turns', body);
}

describe('protocol version', () => {
  it('accepts version 1 or none and rejects others with the supported list', async () => {
    expect((await request(server.url, 'GET', '/healthz')).status).toBe(200);
    const bad = await request(server.url, 'GET', '/api/v1/chat/sessions', undefined, {
      'parley-protocol-version': '2',
    });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ error: 'unsupported_protocol_version', supported: [1] });
    const plain = await fetch(`${server.url}/api/v1/chat/sessions`);
    expect(plain.status).toBe(200);
    expect(plain.headers.get('parley-protocol-version')).toBe('1');
  });
});

describe('sessions (§1)', () => {
  it('creates a session with its greeting journaled before anyone subscribes', async () => {
    const created = await request(server.url, 'POST', '/api/v1/chat/sessions', {
      agent: 'greeter',
      title: 'T',
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      agent: 'greeter',
      title: 'T',
      state: 'idle',
      latest_sequence: 1,
    });
    const stream = await SseClient.open(server.url, created.body.session_id);
    await stream.waitFor((client) => client.events.length === 1);
    expect(stream.events[0]).toMatchObject({
      type: 'message',
      sequence: 1,
      message: { role: 'assistant', content: 'Hello! How can I help?' },
    });
    stream.close();
  });

  it('rejects an unknown agent with 404 and writes nothing', async () => {
    const before = await request(server.url, 'GET', '/api/v1/chat/sessions?limit=200');
    const created = await request(server.url, 'POST', '/api/v1/chat/sessions', { agent: 'nobody' });
    expect(created.status).toBe(404);
    expect(created.body.error).toBe('unknown_agent');
    const after = await request(server.url, 'GET', '/api/v1/chat/sessions?limit=200');
    expect(after.body.items.length).toBe(before.body.items.length);
  });

  it('lists sessions newest activity first with a stable cursor', async () => {
    const ids: string[] = [];
    for (let index = 0; index < 5; index++) {
      const created = await request(server.url, 'POST', '/api/v1/chat/sessions', {});
      ids.push(created.body.session_id);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await request(
        server.url,
        'GET',
        `/api/v1/chat/sessions?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect(page.status).toBe(200);
      expect(page.body.items.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.items.map((item: any) => item.session_id));
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(new Set(seen).size).toBe(seen.length);
    // the five newest are ours, newest first
    expect(seen.slice(0, 5)).toEqual([...ids].reverse());
    const bad = await request(server.url, 'GET', '/api/v1/chat/sessions?cursor=garbage');
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('invalid_cursor');
    // Times JavaScript reads but the database refuses: a day that rolls over, year 0.
    for (const time of ['2026-02-30T00:00:00.000Z', '0000-01-01T00:00:00.000Z']) {
      const forged = Buffer.from(JSON.stringify([time, 's_1'])).toString('base64url');
      for (const path of ['/api/v1/chat/sessions', '/api/v1/executions']) {
        const refused = await request(server.url, 'GET', `${path}?cursor=${forged}`);
        expect(refused.status, `${path} ${time}`).toBe(400);
        expect(refused.body.error).toBe('invalid_cursor');
      }
    }
  });

  it('answers 404 for a missing session on every session endpoint', async () => {
    for (const path of ['', '/messages', '/events']) {
      const response = await request(
        server.url,
        'GET',
        `/api/v1/chat/sessions/01NOSUCHSESSION${path}`,
      );
      expect(response.status, path).toBe(404);
      expect(response.body.error).toBe('session_not_found');
    }
  });
});

describe('admission (§2) and the stream (§3)', () => {
  it('admits a turn, streams the reply and completes it with one done', async () => {
    const id = turnId();
    const admitted = await admit({ turn_id: id, message: 'the retry was fine' });
    expect(admitted.status).toBe(202);
    expect(admitted.body).toMatchObject({ turn_id: id, sequence: 1, state: 'accepted' });
    const sessionId = admitted.body.session_id;
    const stream = await SseClient.open(server.url, sessionId);
    await stream.waitForType('done');
    const types = stream.events.map((event) => event.type);
    expect(types[0]).toBe('message');
    expect(types[1]).toBe('turn_started');
    expect(types.filter((type) => type === 'done')).toHaveLength(1);
    expect(types).toContain('usage');
    const text = stream.events
      .filter((event) => event.type === 'text_delta')
      .map((event) => event.delta)
      .join('');
    expect(text).toBe('You said: the retry was fine');
    const done = stream.events.find((event) => event.type === 'done');
    expect(done).toMatchObject({
      turn_ids: [id],
      final_message: { role: 'assistant', content: text },
    });
    // every frame's SSE id and event equal the JSON sequence and type
    for (const frame of stream.frames.filter((frame) => frame.id !== null)) {
      expect(Number(frame.id)).toBe(frame.data.sequence);
      expect(frame.event).toBe(frame.data.type);
    }
    const usage = stream.events.find((event) => event.type === 'usage');
    expect(usage).toMatchObject({ model: 'demo/echo', output_tokens: 6 });
    stream.close();

    const projection = await request(server.url, 'GET', `/api/v1/chat/sessions/${sessionId}`);
    expect(projection.body).toMatchObject({
      state: 'idle',
      current_turn: null,
      latest_sequence: done.sequence,
    });
    expect(projection.body.usage.output_tokens).toBe(6);
  });

  it('reconnects with Last-Event-ID and gets exactly what it missed, and nothing after done', async () => {
    const admitted = await admit({ turn_id: turnId(), message: 'one two three four five' });
    const sessionId = admitted.body.session_id;
    const full = await SseClient.open(server.url, sessionId);
    await full.waitForType('done');
    full.close();
    const all = full.events;
    const middle = all[2].sequence;
    const resumed = await SseClient.open(server.url, sessionId, { lastEventId: String(middle) });
    await resumed.waitForType('done');
    expect(resumed.events.map((event) => event.sequence)).toEqual(
      all.filter((event) => event.sequence > middle).map((event) => event.sequence),
    );
    resumed.close();
    // header wins over ?after=
    const both = await SseClient.open(server.url, sessionId, {
      lastEventId: String(middle),
      after: 0,
    });
    await both.waitForType('done');
    expect(both.events[0].sequence).toBe(middle + 1);
    both.close();
    // at the sequence of done: nothing again, the stream stays open
    const atDone = await SseClient.open(server.url, sessionId, {
      after: all[all.length - 1].sequence,
    });
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(atDone.events).toEqual([]);
    expect(atDone.closed).toBe(false);
    atDone.close();
  });

  it('answers 409 cursor_ahead and 400 for a malformed cursor', async () => {
    const admitted = await admit({ turn_id: turnId(), message: 'hi' });
    const sessionId = admitted.body.session_id;
    const ahead = await SseClient.open(server.url, sessionId, { after: 999 });
    expect(ahead.status).toBe(409);
    expect(ahead.error).toMatchObject({ error: 'cursor_ahead' });
    expect(typeof ahead.error.latest_sequence).toBe('number');
    const malformed = await SseClient.open(server.url, sessionId, { lastEventId: 'abc' });
    expect(malformed.status).toBe(400);
    expect(malformed.error.error).toBe('invalid_cursor');
  });

  it('answers 410 resync_required for a cursor below pruned history', async () => {
    const admitted = await admit({ turn_id: turnId(), message: 'prune me' });
    const sessionId = admitted.body.session_id;
    const stream = await SseClient.open(server.url, sessionId);
    await stream.waitForType('done');
    stream.close();
    const latest = stream.events[stream.events.length - 1].sequence;
    const pruned = await request(server.url, 'POST', '/api/v1/admin/prune', {
      older_than_seconds: 0,
    });
    expect(pruned.status).toBe(200);
    expect(pruned.body.pruned_events).toBeGreaterThanOrEqual(latest);
    const projection = await request(server.url, 'GET', `/api/v1/chat/sessions/${sessionId}`);
    expect(projection.body.earliest_sequence).toBe(latest + 1);
    const gone = await SseClient.open(server.url, sessionId, { after: 1 });
    expect(gone.status).toBe(410);
    expect(gone.error).toEqual({
      error: 'resync_required',
      message: expect.any(String),
      requested_sequence: 1,
      earliest_available_sequence: latest + 1,
      latest_sequence: latest,
    });
    // resuming at latest_sequence (what a resyncing client does) is fine
    const resumed = await SseClient.open(server.url, sessionId, { after: latest });
    expect(resumed.status).toBe(200);
    resumed.close();
    // the transcript is never pruned
    const transcript = await request(
      server.url,
      'GET',
      `/api/v1/chat/sessions/${sessionId}/messages`,
    );
    expect(transcript.body.items.map((item: any) => item.role)).toEqual(['assistant', 'user']);
  });

  it('pages the transcript backwards', async () => {
    const first = await admit({ turn_id: turnId(), message: 'first' });
    const sessionId = first.body.session_id;
    const stream = await SseClient.open(server.url, sessionId);
    await stream.waitFor(
      (client) => client.events.filter((event) => event.type === 'done').length === 1,
    );
    await admit({ session_id: sessionId, turn_id: turnId(), message: 'second' });
    await stream.waitFor(
      (client) => client.events.filter((event) => event.type === 'done').length === 2,
    );
    stream.close();
    const page1 = await request(
      server.url,
      'GET',
      `/api/v1/chat/sessions/${sessionId}/messages?limit=3`,
    );
    expect(page1.body.items.map((item: any) => item.content)).toEqual([
      'You said: second',
      'second',
      'You said: first',
    ]);
    const page2 = await request(
      server.url,
      'GET',
      `/api/v1/chat/sessions/${sessionId}/messages?limit=3&before=${page1.body.next_cursor}`,
    );
    expect(page2.body.items.map((item: any) => item.content)).toEqual(['first']);
    expect(page2.body.next_cursor).toBeNull();
  });
});

describe('bad input writes nothing', () => {
  async function countRows() {
    const result = await server.db.query<{ turns: number; messages: number; events: number }>(
      `select (select count(*)::int from turns) as turns, (select count(*)::int from messages) as messages,
              (select count(*)::int from events) as events`,
    );
    return result.rows[0];
  }

  it.each([
    ['empty message', { turn_id: 'bad_1', message: '   ' }, 400, 'empty_message'],
    ['missing turn_id', { message: 'hi' }, 400, 'invalid_request'],
    ['bad turn_id', { turn_id: 'has space', message: 'hi' }, 400, 'invalid_request'],
    ['long turn_id', { turn_id: 'x'.repeat(129), message: 'hi' }, 400, 'invalid_request'],
    ['unknown agent', { turn_id: 'bad_2', message: 'hi', agent: 'ghost' }, 404, 'unknown_agent'],
    [
      'unknown session',
      { turn_id: 'bad_3', message: 'hi', session_id: '01NOPE' },
      404,
      'session_not_found',
    ],
    [
      'over-long message',
      { turn_id: 'bad_4', message: 'x'.repeat(33 * 1024) },
      413,
      'message_too_long',
    ],
    ['unknown field', { turn_id: 'bad_5', message: 'hi', extra: 1 }, 400, 'invalid_request'],
  ])('%s → %s %s', async (_name, body, status, code) => {
    const before = await countRows();
    const response = await admit(body);
    expect(response.status).toBe(status);
    expect(response.body.error).toBe(code);
    expect(typeof response.body.message).toBe('string');
    expect(await countRows()).toEqual(before);
  });

  it('malformed JSON → 400 malformed_json', async () => {
    const before = await countRows();
    const response = await request(server.url, 'POST', '/api/v1/chat/turns', '{"turn_id": "x", ');
    expect(response.status).toBe(400);
    expect(response.body.error).toBe('malformed_json');
    expect(await countRows()).toEqual(before);
  });

  it('a body over the limit is refused with 413 before it is read', async () => {
    const before = await countRows();
    const response = await request(server.url, 'POST', '/api/v1/chat/turns', {
      turn_id: 'big',
      message: 'x'.repeat(200 * 1024),
    });
    expect(response.status).toBe(413);
    expect(response.body.error).toBe('payload_too_large');
    expect(await countRows()).toEqual(before);
  });

  it('unknown endpoints answer a coded 404', async () => {
    const response = await request(server.url, 'GET', '/api/v1/nothing');
    expect(response.status).toBe(404);
    expect(response.body.error).toBe('not_found');
  });
});

describe('health and metadata (§6)', () => {
  it('serves healthz, readyz, the OpenAPI document and Prometheus metrics', async () => {
    expect((await request(server.url, 'GET', '/healthz')).body).toEqual({ status: 'ok' });
    const ready = await request(server.url, 'GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.checks).toEqual({ storage: true, migrations: true, providers: true });
    const openapi = await request(server.url, 'GET', '/api/v1/openapi.json');
    expect(openapi.body.openapi).toBe('3.1.0');
    for (const path of [
      '/api/v1/chat/sessions',
      '/api/v1/chat/sessions/{session_id}',
      '/api/v1/chat/sessions/{session_id}/messages',
      '/api/v1/chat/turns',
      '/api/v1/chat/sessions/{session_id}/events',
      '/api/v1/chat/sessions/{session_id}/turns/{turn_id}/cancel',
      '/api/v1/chat/sessions/{session_id}/inputs/{request_id}',
    ]) {
      expect(openapi.body.paths[path], path).toBeDefined();
    }
    const metrics = await request(server.url, 'GET', '/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.body).toContain('parley_turns_admitted_total');
    expect(metrics.body).toContain('parley_http_requests_total');
  });
});
