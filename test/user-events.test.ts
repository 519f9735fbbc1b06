import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkJournalInvariants } from './support/invariants.js';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';
import { SseClient } from './support/sse.js';

// The user stream (docs/PROTOCOL.md, "The user stream"), on the engine the suite runs on:
// one SSE stream per person with what their screens show across sessions, live; another
// person's private sessions never in it; a reconnect with Last-Event-ID gets what it missed.

let server: TestServer;
const keys = { alice: 'alice-key', bob: 'bob-key', globex: 'globex-admin-key' };
const auth = (key: string) => ({ authorization: `Bearer ${key}` });
const open: SseClient[] = [];

beforeAll(async () => {
  server = await startTestServer(
    {
      // Each read looks this far back past the last: short, so that "older" is quick to
      // reach; long enough for an admission's commit on a loaded machine.
      server: { user_stream_overlap_ms: 1500 },
      auth: {
        keys: [
          { key_env: 'K_ALICE', tenant: 'acme', user: 'alice', roles: [] },
          { key_env: 'K_BOB', tenant: 'acme', user: 'bob', roles: [] },
          // An admin sees every session of its tenant: none of another's.
          { key_env: 'K_GLOBEX', tenant: 'globex', user: 'gus', roles: ['admin'] },
        ],
      },
      agents: {
        default: {
          model: 'demo/echo',
          visibility: 'private',
          tools: { calculator: 'approve' },
        },
      },
    },
    { K_ALICE: keys.alice, K_BOB: keys.bob, K_GLOBEX: keys.globex },
  );
});
afterAll(async () => {
  for (const client of open) client.close();
  if (server) {
    await checkJournalInvariants(server.db);
    await server.close();
  }
});

async function stream(key: string, lastEventId?: string): Promise<SseClient> {
  const client = await SseClient.openPath(server.url, '/api/v1/me/events', {
    headers: auth(key),
    ...(lastEventId === undefined ? {} : { lastEventId }),
  });
  open.push(client);
  return client;
}

let turns = 0;
async function say(key: string, message: string, sessionId?: string): Promise<string> {
  const admitted = await request(
    server.url,
    'POST',
    '/api/v1/chat/turns',
    { turn_id: `user_stream_${++turns}`, message, ...(sessionId ? { session_id: sessionId } : {}) },
    auth(key),
  );
  expect(admitted.status).toBe(202);
  return admitted.body.session_id as string;
}

/** The session events a stream received, as `session:type`. */
const seen = (client: SseClient) =>
  client.frames
    .filter((frame) => frame.event === 'session_event')
    .map((frame) => `${frame.data.session_id}:${frame.data.event.type}`);

const doneIn = (sessionId: string) => (client: SseClient) =>
  seen(client).includes(`${sessionId}:done`);

describe('the user stream', () => {
  it("carries the caller's sessions live, and nobody else's private ones", async () => {
    const alice = await stream(keys.alice);
    const globex = await stream(keys.globex);
    await alice.waitFor((client) => client.frames.some((frame) => frame.event === 'ready'));
    expect(alice.frames[0]).toMatchObject({ event: 'ready', data: { resumed: false } });
    const bobs = await say(keys.bob, 'a private hello');
    const mine = await say(keys.alice, 'hello stream');
    await alice.waitFor(doneIn(mine));
    expect(seen(alice)).toEqual(
      expect.arrayContaining([`${mine}:message`, `${mine}:turn_started`, `${mine}:done`]),
    );
    // Text deltas and usage are the conversation's own stream's, not this one's.
    expect(seen(alice).some((line) => line.endsWith(':text_delta'))).toBe(false);
    // Bob's private session finished too, and never reached Alice.
    await until(
      () => request(server.url, 'GET', `/api/v1/chat/sessions/${bobs}`, undefined, auth(keys.bob)),
      (answer) => answer.body.state === 'idle',
      "bob's turn",
    );
    expect(seen(alice).some((line) => line.startsWith(`${bobs}:`))).toBe(false);
    // Another tenant's admin, whose stream read all along, saw none of it.
    const theirs = await say(keys.globex, 'their own');
    await globex.waitFor(doneIn(theirs));
    expect(seen(globex).every((line) => line.startsWith(`${theirs}:`))).toBe(true);
    // Each item once per connection, every frame with a cursor.
    const keysSeen = alice.frames
      .filter((frame) => frame.event === 'session_event')
      .map((frame) => `${frame.data.session_id}:${frame.data.event.sequence}`);
    expect(new Set(keysSeen).size).toBe(keysSeen.length);
    expect(
      alice.frames.filter((f) => f.event === 'session_event').every((f) => /^\d+$/.test(f.id!)),
    ).toBe(true);
  });

  it('shows an approval appear and resolve (the inbox), and workspace panels as they change', async () => {
    const alice = await stream(keys.alice);
    const sessionId = await say(keys.alice, '/tool calculator {"expression": "6*7"}');
    await alice.waitFor((client) => seen(client).includes(`${sessionId}:input_required`));
    const required = alice.frames.find(
      (frame) => frame.event === 'session_event' && frame.data.event.type === 'input_required',
    );
    const answered = await request(
      server.url,
      'POST',
      `/api/v1/chat/sessions/${sessionId}/inputs/${required!.data.event.request_id}`,
      { approved: true, expected_sequence: required!.data.event.sequence },
      auth(keys.alice),
    );
    expect(answered.status).toBeLessThan(300);
    await alice.waitFor((client) => seen(client).includes(`${sessionId}:input_resolved`));
    await alice.waitFor(doneIn(sessionId));

    const made = await request(
      server.url,
      'POST',
      '/api/v1/panels',
      { title: 'Desk', scope: 'workspace', document: { type: 'markdown', text: 'v1' } },
      auth(keys.alice),
    );
    await alice.waitFor((client) =>
      client.frames.some(
        (frame) => frame.event === 'panel' && frame.data.panel.id === made.body.id,
      ),
    );
    await request(
      server.url,
      'PUT',
      `/api/v1/panels/${made.body.id}`,
      { title: 'Desk', document: { type: 'markdown', text: 'v2' } },
      auth(keys.alice),
    );
    await alice.waitFor((client) =>
      client.frames.some(
        (frame) => frame.event === 'panel' && frame.data.panel.document.text === 'v2',
      ),
    );
    // Bob sees none of Alice's own desktop: neither the panel nor its removal.
    const bob = await stream(keys.bob);
    await bob.waitFor((client) => client.frames.some((frame) => frame.event === 'ready'));
    // A deleted workspace panel is a removal: its desktops drop it.
    const deleted = await request(
      server.url,
      'DELETE',
      `/api/v1/panels/${made.body.id}`,
      undefined,
      auth(keys.alice),
    );
    expect(deleted.status).toBe(204);
    await alice.waitFor((client) =>
      client.frames.some(
        (frame) => frame.event === 'panel_removed' && frame.data.panel_id === made.body.id,
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, server.config.runtime.pollMs * 2));
    expect(bob.frames.some((frame) => frame.event.startsWith('panel'))).toBe(false);
  });

  it('resumes with Last-Event-ID: what changed while away arrives', async () => {
    const first = await stream(keys.alice);
    const sessionId = await say(keys.alice, 'before the break');
    await first.waitFor(doneIn(sessionId));
    const lastId = first.frames.filter((frame) => frame.id !== null).at(-1)!.id!;
    first.close();
    // While away: a reply in the same session, and a new session.
    await say(keys.alice, 'while away', sessionId);
    const fresh = await say(keys.alice, 'a new one');
    await until(
      () =>
        request(server.url, 'GET', `/api/v1/chat/sessions/${fresh}`, undefined, auth(keys.alice)),
      (answer) => answer.body.state === 'idle',
      'the new session to finish',
    );
    // Once what happened while away is older than the overlap, a stream opened afresh does
    // not carry it; only the resumed one does.
    await new Promise((resolve) =>
      setTimeout(resolve, 2 * server.config.server.userStreamOverlapMs),
    );
    const control = await stream(keys.alice);
    const back = await stream(keys.alice, lastId);
    await back.waitFor((client) => doneIn(fresh)(client) && client.frames.length > 3);
    expect(back.frames[0]).toMatchObject({ event: 'ready', data: { resumed: true } });
    const dones = back.frames.filter(
      (frame) =>
        frame.event === 'session_event' &&
        frame.data.event.type === 'done' &&
        frame.data.session_id === sessionId,
    );
    expect(dones.map((frame) => frame.data.event.final_message.content)).toContain(
      'You said: while away',
    );
    // Something new, which both see: the control stream has read by then.
    const later = await say(keys.alice, 'after the break');
    await control.waitFor(doneIn(later));
    expect(seen(control).every((line) => line.startsWith(`${later}:`))).toBe(true);
  });

  it('resumes a connection lost midway through a long read without a gap', async () => {
    // A read that covers more than the overlap sends its items in time order; a client
    // that loses the connection after the first of them resumes from that frame's id.
    const from = String(Date.now());
    const pause = () =>
      new Promise((resolve) => setTimeout(resolve, 2 * server.config.server.userStreamOverlapMs));
    const sessions: string[] = [];
    for (const text of ['long read one', 'long read two', 'long read three']) {
      if (sessions.length > 0) await pause();
      const sessionId = await say(keys.bob, text);
      await until(
        () =>
          request(
            server.url,
            'GET',
            `/api/v1/chat/sessions/${sessionId}`,
            undefined,
            auth(keys.bob),
          ),
        (answer) => answer.body.state === 'idle' && answer.body.queued_turns === 0,
        `"${text}" answered`,
      );
      sessions.push(sessionId);
    }
    const all = (client: SseClient) => sessions.every((sessionId) => doneIn(sessionId)(client));
    const first = await stream(keys.bob, from);
    await first.waitFor(all);
    const firstItem = first.frames.find((frame) => frame.event === 'session_event');
    first.close();
    // Lost right after its first item: the rest must come on the next connection.
    const back = await stream(keys.bob, firstItem?.id ?? undefined);
    await back.waitFor(all);
    expect(firstItem?.data.session_id).toBe(sessions[0]);
  });

  it('refuses a cursor it did not make, and asks to resync from one too old', async () => {
    const bad = await stream(keys.alice, 'yesterday');
    expect(bad.status).toBe(400);
    expect(bad.error.error).toBe('invalid_cursor');
    const future = await stream(keys.alice, String(Date.now() + 3_600_000));
    expect(future.status).toBe(400);
    const old = await stream(keys.alice, String(Date.now() - 2 * 3_600_000));
    await old.waitFor((client) => client.frames.length > 0);
    expect(old.frames[0]).toMatchObject({ event: 'resync', data: { resumed: false } });
  });
});
