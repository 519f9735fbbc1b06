import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';

/**
 * `server.request_timeout_ms` holds for a half-sent body whatever the server did before:
 * after event streams came and went, a reader that stopped reading, a 429 for too many
 * streams on a keep-alive socket — and even when Node's own connection sweep does not
 * see the connection (requestDeadline.ts). The outcome is asserted (answered 408, or
 * closed, before a bound well past the timeout), never a duration.
 */

const timeoutMs = 1000;
/** The bound: the timeout, the sweep's interval and a shared machine's slack. */
const boundMs = timeoutMs + 10_000;
const member = { authorization: 'Bearer member-key' };
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer(
    {
      server: { request_timeout_ms: timeoutMs, keepalive_ms: 250 },
      limits: { streams_per_principal: 2 },
      auth: { keys: [{ key_env: 'MEMBER_KEY', tenant: 'acme', user: 'max', roles: ['member'] }] },
    },
    { MEMBER_KEY: 'member-key' },
  );
});
afterAll(async () => {
  await server.close();
});

interface RawConnection {
  socket: Socket;
  received: string;
  closed: boolean;
}

function open(): Promise<RawConnection> {
  const { port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    const connection: RawConnection = { socket, received: '', closed: false };
    socket.on('data', (chunk) => (connection.received += chunk.toString('utf8')));
    socket.on('close', () => (connection.closed = true));
    socket.on('error', () => {});
    socket.once('connect', () => resolve(connection));
    socket.once('error', reject);
  });
}

/** Headers and 10 of 100 announced body bytes, with a valid key. */
const halfSent =
  'POST /api/v1/chat/turns HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n' +
  `authorization: ${member.authorization}\r\ncontent-length: 100\r\n\r\n{"turn_id"`;

/** Sends the half-sent request and waits, up to the bound, for a 408 or the socket's close. */
async function expectCutOff(connection: RawConnection): Promise<void> {
  const before = connection.received.length;
  connection.socket.write(halfSent);
  const outcome = await until(
    () => ({ closed: connection.closed, answer: connection.received.slice(before) }),
    (seen) => seen.closed || /^HTTP\/1\.1 408 /.test(seen.answer),
    'the half-sent request to be answered 408 or closed',
    boundMs,
  );
  if (outcome.answer !== '') {
    expect(outcome.answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(outcome.answer).toContain('"error":"request_timeout"');
  }
  connection.socket.destroy();
}

describe('a half-sent request body', () => {
  it('is cut off after event streams, a paused reader and a stream-cap 429', async () => {
    const created = await request(server.url, 'POST', '/api/v1/chat/sessions', {}, member);
    const sessionId = created.body.session_id as string;
    const admitted = await request(
      server.url,
      'POST',
      '/api/v1/chat/turns',
      { session_id: sessionId, turn_id: 'deadline_1', message: 'many words '.repeat(200) },
      member,
    );
    expect(admitted.status).toBe(202);
    const eventsRequest =
      `GET /api/v1/chat/sessions/${sessionId}/events HTTP/1.1\r\nhost: 127.0.0.1\r\n` +
      `authorization: ${member.authorization}\r\n\r\n`;

    // Event streams served and closed by their clients.
    for (let index = 0; index < 3; index++) {
      const controller = new AbortController();
      const stream = await fetch(`${server.url}/api/v1/chat/sessions/${sessionId}/events`, {
        headers: { ...member, 'parley-protocol-version': '1' },
        signal: controller.signal,
      });
      expect(stream.status).toBe(200);
      const first = await stream.body!.getReader().read();
      expect(new TextDecoder().decode(first.value)).toMatch(/^(retry|id|event|:)/);
      controller.abort();
    }
    // A reader that stops reading (the server disconnects it after two keep-alives).
    const paused = await open();
    paused.socket.write(eventsRequest);
    paused.socket.pause();
    // One more stream: the principal is at its limit, so the next one is refused 429 on
    // a keep-alive connection that stays open.
    const held = await open();
    held.socket.write(eventsRequest);
    await until(
      () => held.received,
      (text) => text.includes('text/event-stream'),
      'the held stream',
    );
    const refused = await open();
    refused.socket.write(eventsRequest);
    await until(
      () => refused.received,
      (text) => /^HTTP\/1\.1 429 [\s\S]*too_many_streams/.test(text),
      'the 429 too_many_streams',
    );

    await expectCutOff(await open());
    // The same on the keep-alive socket that was just answered 429.
    expect(refused.closed).toBe(false);
    await expectCutOff(refused);
    for (const connection of [paused, held]) connection.socket.destroy();
  });

  it("is cut off even when Node's own sweep does not see the connection", async () => {
    // Node times requests out from its list of connections in progress, swept on an
    // interval; with its timeouts at 0 the sweep does nothing — as for a connection that
    // list lost. Parley's own deadline must still answer.
    const http = server.app!.server;
    const saved = { requestTimeout: http.requestTimeout, headersTimeout: http.headersTimeout };
    http.requestTimeout = 0;
    http.headersTimeout = 0;
    try {
      await expectCutOff(await open());
    } finally {
      Object.assign(http, saved);
    }
  });

  it('leaves a complete request alone, and a request without a body', async () => {
    const answered = await request(server.url, 'GET', '/healthz');
    expect(answered.status).toBe(200);
    const created = await request(server.url, 'POST', '/api/v1/chat/sessions', {}, member);
    expect(created.status).toBe(201);
  });
});
