import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkJournalInvariants } from './support/invariants.js';
import { request, startTestServer, type TestServer } from './support/server.js';
import { SseClient } from './support/sse.js';

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({}, { PARLEY_DEMO_DELAY_MS: '40' });
});
afterAll(async () => {
  await checkJournalInvariants(server.db);
  await server.close();
});

const words = (count: number, prefix: string) =>
  Array.from({ length: count }, (_, index) => `${prefix}${index}`).join(' ');

describe('pivot: new input mid-generation is folded in (RUNTIME.md)', () => {
  it('aborts the running step, drops its text with attempt_reset, and answers both in one reply', async () => {
    const first = await request(server.url, 'POST', '/api/v1/chat/turns', {
      turn_id: 'pivot_a',
      message: words(40, 'alpha'),
    });
    const sessionId = first.body.session_id;
    const stream = await SseClient.open(server.url, sessionId);
    await stream.waitFor((client) => client.events.some((event) => event.type === 'text_delta'));
    const second = await request(server.url, 'POST', '/api/v1/chat/turns', {
      session_id: sessionId,
      turn_id: 'pivot_b',
      message: 'beta gamma',
    });
    expect(second.status).toBe(202);
    await stream.waitForType('done');
    await new Promise((resolve) => setTimeout(resolve, 300));
    stream.close();

    const events = stream.events;
    const dones = events.filter((event) => event.type === 'done');
    expect(dones).toHaveLength(1);
    expect(dones[0].turn_ids).toEqual(['pivot_a', 'pivot_b']);
    const reset = events.findIndex((event) => event.type === 'attempt_reset');
    expect(reset).toBeGreaterThan(0);
    const restarted = events.findIndex(
      (event, index) => index > reset && event.type === 'turn_started',
    );
    expect(events[restarted]).toMatchObject({ turn_ids: ['pivot_a', 'pivot_b'] });
    // the text after the last reset is exactly the final reply
    const text = events
      .slice(restarted)
      .filter((event) => event.type === 'text_delta')
      .map((event) => event.delta)
      .join('');
    expect(text).toBe(dones[0].final_message.content);
    expect(text).toContain('[1] You said: alpha0');
    expect(text).toContain('alpha39');
    expect(text).toContain('[2] You said: beta gamma');
  });
});
