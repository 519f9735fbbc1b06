import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request, startTestServer, type TestServer } from './support/server.js';
import { SseClient } from './support/sse.js';

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ server: { keepalive_ms: 200 } });
});
afterAll(async () => {
  await server.close();
});

async function completeTurns(
  sessionId: string | null,
  count: number,
  prefix: string,
  options: { oneByOne?: boolean } = {},
): Promise<string> {
  let session = sessionId;
  for (let index = 0; index < count; index++) {
    const admitted = await request(server.url, 'POST', '/api/v1/chat/turns', {
      ...(session ? { session_id: session } : {}),
      turn_id: `${prefix}_${index}`,
      message: `message ${index}`,
    });
    expect(admitted.status).toBe(202);
    session = admitted.body.session_id;
    if (options.oneByOne) await waitIdle(session as string);
  }
  return session as string;
}

async function waitIdle(sessionId: string): Promise<any> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const projection = (await request(server.url, 'GET', `/api/v1/chat/sessions/${sessionId}`))
      .body;
    const idle = projection.queued_turns === 0 && projection.state === 'idle';
    if (idle || Date.now() > deadline) {
      if (!idle) console.log('NOT IDLE', JSON.stringify(projection));
      return projection;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Turns answered so far: quick admissions fold into bursts, so count turn_ids, not dones. */
const answered = (client: SseClient) =>
  client.events
    .filter((event) => event.type === 'done')
    .flatMap((event) => event.turn_ids as string[]).length;

describe('SSE delivery details (§3)', () => {
  it('sends keep-alive comments while idle, and the stream stays open for later turns', async () => {
    const sessionId = await completeTurns(null, 1, 'ka');
    const stream = await SseClient.open(server.url, sessionId);
    await stream.waitForType('done');
    await stream.waitFor(
      (client) => client.comments.filter((comment) => comment === 'keep-alive').length >= 2,
    );
    await completeTurns(sessionId, 1, 'ka_later');
    await stream.waitFor(
      (client) => client.events.filter((event) => event.type === 'done').length === 2,
    );
    stream.close();
  });

  it('replays a long journal across pages without a gap or a duplicate, then goes live', async () => {
    const sessionId = await completeTurns(null, 50, 'long', { oneByOne: true });
    const latest = (await waitIdle(sessionId)).latest_sequence;
    expect(latest).toBeGreaterThan(200);
    const replay = await SseClient.open(server.url, sessionId, { after: 3 });
    await replay.waitFor((client) => client.events.length === latest - 3);
    expect(replay.events.map((event) => event.sequence)).toEqual(
      Array.from({ length: latest - 3 }, (_, index) => index + 4),
    );
    const before = answered(replay);
    await completeTurns(sessionId, 1, 'long_live');
    await replay.waitFor((client) => answered(client) === before + 1);
    replay.close();
  });

  it('a reader that does not read never slows the worker or other readers', async () => {
    const sessionId = await completeTurns(null, 1, 'slow');
    // A raw request whose body we never consume: its socket buffer fills, nothing else waits.
    const stalled = await fetch(`${server.url}/api/v1/chat/sessions/${sessionId}/events`);
    expect(stalled.status).toBe(200);
    const reader = await SseClient.open(server.url, sessionId);
    await completeTurns(sessionId, 20, 'slow_more');
    await reader.waitFor((client) => answered(client) === 21, 60_000);
    reader.close();
    await stalled.body?.cancel();
  });

  it('closing a stream does not cancel accepted work', async () => {
    const admitted = await request(server.url, 'POST', '/api/v1/chat/turns', {
      turn_id: 'close_1',
      message: 'keep going after I leave',
    });
    const stream = await SseClient.open(server.url, admitted.body.session_id);
    stream.close();
    const later = await SseClient.open(server.url, admitted.body.session_id);
    await later.waitForType('done');
    expect(later.events.find((event) => event.type === 'done').final_message.content).toBe(
      'You said: keep going after I leave',
    );
    later.close();
  });
});
