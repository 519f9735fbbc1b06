import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request, startTestServer, type TestServer } from './support/server.js';

// A thread stream a client leaves gives its slot back: streams_per_principal counts the
// streams open now, not those ever opened.

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ limits: { streams_per_principal: 2 } });
});
afterAll(async () => {
  await server?.close();
});

/** Opens the thread's stream, reads its first bytes, and leaves. */
async function openAndLeave(sessionId: string, cursor: string | null): Promise<number> {
  const controller = new AbortController();
  const response = await fetch(`${server.url}/ag-ui/default/threads/${sessionId}/events`, {
    headers: {
      accept: 'text/event-stream',
      ...(cursor === null ? {} : { 'last-event-id': cursor }),
    },
    signal: controller.signal,
  });
  if (response.status === 200) {
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
  } else {
    await response.body?.cancel();
  }
  controller.abort();
  return response.status;
}

describe('AG-UI thread streams and the per-principal limit', () => {
  it('gives a slot back when the client leaves, whatever the cursor', async () => {
    const admitted = await request(server.url, 'POST', '/api/v1/chat/turns', {
      turn_id: 'slots_1',
      message: 'hello',
    });
    expect(admitted.status).toBe(202);
    const sessionId = admitted.body.session_id as string;
    for (const cursor of [null, '0', '1', null, '0', '1', '0', '0']) {
      expect(await openAndLeave(sessionId, cursor)).toBe(200);
      // The server sees the connection close on its next write at the latest.
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
  });

  it('gives a slot back when the client left before the stream opened', async () => {
    const admitted = await request(server.url, 'POST', '/api/v1/chat/turns', {
      turn_id: 'slots_2',
      message: 'hello',
    });
    const sessionId = admitted.body.session_id as string;
    for (let attempt = 0; attempt < 6; attempt++) {
      // Gone while the server still looks the thread up.
      const controller = new AbortController();
      const leaving = fetch(`${server.url}/ag-ui/default/threads/${sessionId}/events`, {
        headers: { accept: 'text/event-stream', 'last-event-id': '1' },
        signal: controller.signal,
      }).catch(() => null);
      await new Promise((resolve) => setTimeout(resolve, 2));
      controller.abort();
      await leaving;
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await openAndLeave(sessionId, '1')).toBe(200);
    expect(await openAndLeave(sessionId, null)).toBe(200);
  });
});
