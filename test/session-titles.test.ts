import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { titleFrom } from '../src/store/sessionTitle.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// A session a turn creates is titled from its first message (docs/PROTOCOL.md), so a
// newcomer's conversations are not all "Untitled conversation".

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ agents: { default: { model: 'demo/echo' } } });
});
afterAll(async () => {
  await server?.close();
});

describe('session titles', () => {
  it("titles a session a turn creates with its message's first line", async () => {
    const admitted = await request(server.url, 'POST', '/api/v1/chat/turns', {
      turn_id: `title_${Date.now()}`,
      message: '\n  Where is order A17?  \nIt left Tuesday.',
    });
    expect(admitted.status).toBe(202);
    const session = await request(
      server.url,
      'GET',
      `/api/v1/chat/sessions/${admitted.body.session_id}`,
    );
    expect(session.body.title).toBe('Where is order A17?');
  });

  it('keeps a session made untitled as it is', async () => {
    const created = await request(server.url, 'POST', '/api/v1/chat/sessions', {});
    await request(server.url, 'POST', '/api/v1/chat/turns', {
      turn_id: `title_later_${Date.now()}`,
      session_id: created.body.session_id,
      message: 'hello',
    });
    const session = await request(
      server.url,
      'GET',
      `/api/v1/chat/sessions/${created.body.session_id}`,
    );
    expect(session.body.title).toBeNull();
  });

  it('cuts a long first line at a word, with an ellipsis; nothing for no text', () => {
    const long = `${'word '.repeat(30)}end`;
    const title = titleFrom(long) as string;
    expect([...title].length).toBeLessThanOrEqual(80);
    expect(title.endsWith('word…')).toBe(true);
    expect(titleFrom('x'.repeat(100))).toBe(`${'x'.repeat(79)}…`);
    expect(titleFrom('   \n  ')).toBeNull();
  });
});
