import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ParleyClient,
  ParleyClientError,
  SseParser,
  backoffDelay,
  type ParleyEvent,
  type SessionProjection,
  type StateChange,
  type SubscribeOptions,
  type Subscription,
} from '../src/client/index.js';
import { startProcess, type Running } from '../src/cli/start.js';
import { createLogger } from '../src/log.js';
import { testConfig } from './support/config.js';
import { freshStorage } from './support/db.js';
import { checkJournalInvariants } from './support/invariants.js';
import { request, startTestServer, type TestServer } from './support/server.js';
import { until } from './support/poll.js';

/** The SDK (src/client) against a real server: HTTP calls, subscription, reconnect, resync. */

const apiKey = 'test-key-of-alice';
const quickBackoff = { initialMs: 20, maxMs: 200 };
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer(
    {
      auth: {
        keys: [{ key_env: 'PARLEY_KEY_ALICE', tenant: 'acme', user: 'alice', roles: ['*'] }],
      },
      agents: {
        default: { model: 'demo/echo' },
        greeter: { model: 'demo/echo', greeting: 'Hello! How can I help?' },
      },
    },
    { PARLEY_KEY_ALICE: apiKey },
  );
});
afterAll(async () => {
  await checkJournalInvariants(server.db);
  await server.close();
});

function newClient(options: { fetch?: typeof fetch; apiKey?: string | null } = {}): ParleyClient {
  return new ParleyClient({
    baseUrl: server.url,
    apiKey: options.apiKey === null ? undefined : (options.apiKey ?? apiKey),
    fetch: options.fetch,
    backoff: quickBackoff,
  });
}

/** A subscription that records everything it is told, for assertions. */
function record(client: ParleyClient, sessionId: string, options: Partial<SubscribeOptions> = {}) {
  const seen = {
    events: [] as ParleyEvent[],
    /** The subscription's cursor at the moment each onEvent call began. */
    cursorAtHandler: [] as number[],
    states: [] as StateChange[],
    resyncs: [] as SessionProjection[],
    typing: 0,
    subscription: undefined as unknown as Subscription,
    waitFor(condition: () => boolean, what: string) {
      return until(() => condition(), Boolean, what);
    },
    types(): string[] {
      return seen.events.map((event) => event.type);
    },
  };
  seen.subscription = client.subscribe(sessionId, {
    backoff: quickBackoff,
    ...options,
    onEvent: async (event) => {
      seen.cursorAtHandler.push(seen.subscription.cursor);
      // A handler that takes a moment: the cursor must not move until it returns.
      await new Promise((resolve) => setTimeout(resolve, 1));
      seen.events.push(event);
    },
    onState: (change) => seen.states.push(change),
    onResync: (projection) => {
      seen.resyncs.push(projection);
    },
    onTyping: () => seen.typing++,
  });
  return seen;
}

/** The address a fetch call targets, whichever form it was given in. */
function urlOf(input: string | URL | Request): string {
  return typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
}

function sequences(events: ParleyEvent[]): number[] {
  return events.map((event) => event.sequence);
}

function range(from: number, to: number): number[] {
  return Array.from({ length: Math.max(0, to - from + 1) }, (_, index) => from + index);
}

/** The reply as a client shows it: only the deltas of the last attempt count. */
function replyText(events: ParleyEvent[]): string {
  let text = '';
  for (const event of events) {
    if (event.type === 'turn_started' || event.type === 'attempt_reset') text = '';
    if (event.type === 'text_delta') text += event.delta;
  }
  return text;
}

async function waitIdle(client: ParleyClient, sessionId: string): Promise<SessionProjection> {
  return until(
    () => client.getSession(sessionId),
    (projection) =>
      projection.state === 'idle' &&
      projection.current_turn === null &&
      (projection.queued_turns ?? 0) === 0,
    `session ${sessionId} to be idle`,
  );
}

describe('SDK building blocks', () => {
  it('parses SSE split at any point: CRLF, a BOM, comments, multi-line data, frames without id', () => {
    const wire =
      '\uFEFF: keep-alive\r\nid: 7\r\nevent: text_delta\r\ndata: {"a":\r\ndata: 1}\r\n\r\n' +
      'event: typing\ndata: {}\n\nid: 8\n\ndata:x\r\r';
    const expected = [
      { kind: 'comment', text: 'keep-alive' },
      { kind: 'message', id: '7', event: 'text_delta', data: '{"a":\n1}' },
      { kind: 'message', id: null, event: 'typing', data: '{}' },
      { kind: 'message', id: null, event: 'message', data: 'x' },
    ];
    for (let cut = 0; cut <= wire.length; cut++) {
      const parser = new SseParser();
      const frames = [
        ...parser.push(wire.slice(0, cut)),
        ...parser.push(wire.slice(cut)),
        ...parser.finish(),
      ];
      expect(frames, `cut at ${cut}`).toEqual(expected);
    }
  });

  it('backs off exponentially with jitter, within [ceiling/2, ceiling] and never past the cap', () => {
    for (let attempt = 1; attempt <= 12; attempt++) {
      const ceiling = Math.min(2000, 100 * 2 ** (attempt - 1));
      for (let sample = 0; sample < 50; sample++) {
        const delay = backoffDelay(attempt, { initialMs: 100, maxMs: 2000 });
        expect(delay).toBeGreaterThanOrEqual(ceiling / 2);
        expect(delay).toBeLessThanOrEqual(ceiling);
      }
    }
  });
});

describe('ParleyClient: sessions and errors (§1)', () => {
  it('creates, lists, gets and reads sessions, sending the protocol header and the key', async () => {
    const sent: { url: string; headers: Headers }[] = [];
    const client = newClient({
      fetch: (input, init) => {
        sent.push({ url: urlOf(input), headers: new Headers(init?.headers) });
        return fetch(input, init);
      },
    });
    const created = await client.createSession({ agent: 'greeter', title: 'From the SDK' });
    expect(created).toMatchObject({
      agent: 'greeter',
      title: 'From the SDK',
      state: 'idle',
      latest_sequence: 1,
    });
    const second = await client.createSession();
    expect(second.agent).toBe('default');

    const got = await client.getSession(created.session_id);
    expect(got.session_id).toBe(created.session_id);

    // Cursor pagination, newest activity first: the two new sessions lead.
    const first = await client.listSessions({ limit: 1 });
    expect(first.items.map((item) => item.session_id)).toEqual([second.session_id]);
    expect(first.next_cursor).not.toBeNull();
    const next = await client.listSessions({ limit: 1, cursor: first.next_cursor });
    expect(next.items.map((item) => item.session_id)).toEqual([created.session_id]);

    const transcript = await client.listMessages(created.session_id, { limit: 10 });
    expect(transcript.items).toHaveLength(1);
    expect(transcript.items[0]).toMatchObject({
      role: 'assistant',
      content: 'Hello! How can I help?',
    });

    expect(sent.length).toBeGreaterThanOrEqual(6);
    for (const call of sent) {
      expect(call.headers.get('parley-protocol-version'), call.url).toBe('1');
      expect(call.headers.get('authorization'), call.url).toBe(`Bearer ${apiKey}`);
    }
  });

  it('turns error answers into ParleyClientError with code, status and body', async () => {
    const client = newClient();
    const missing = await client.getSession('01NOSUCHSESSION').catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(ParleyClientError);
    expect(missing).toMatchObject({ code: 'session_not_found', status: 404 });
    expect((missing as ParleyClientError).body).toMatchObject({ error: 'session_not_found' });

    const unknown = await client
      .createSession({ agent: 'nobody' })
      .catch((error: unknown) => error);
    expect(unknown).toMatchObject({ code: 'unknown_agent', status: 404 });

    const anonymous = newClient({ apiKey: null });
    const refused = await anonymous.listSessions().catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 'unauthorized', status: 401 });

    const unreachable = new ParleyClient({
      baseUrl: 'http://127.0.0.1:1',
      retries: 1,
      backoff: quickBackoff,
    });
    const down = await unreachable.listSessions().catch((error: unknown) => error);
    expect(down).toMatchObject({ code: 'network_error', status: 0 });
  });

  it('retries idempotent calls after a 5xx, and never a POST without an idempotency key', async () => {
    const calls: string[] = [];
    const failedOnce = new Set<string>();
    const client = newClient({
      fetch: async (input, init) => {
        const key = `${init?.method ?? 'GET'} ${new URL(urlOf(input)).pathname}`;
        calls.push(key);
        if (!failedOnce.has(key)) {
          failedOnce.add(key);
          return new Response(JSON.stringify({ error: 'internal_error', message: 'try again' }), {
            status: 503,
            headers: { 'content-type': 'application/json' },
          });
        }
        return fetch(input, init);
      },
    });
    const page = await client.listSessions({ limit: 5 });
    expect(page.items.length).toBeGreaterThan(0);
    expect(calls.filter((call) => call === 'GET /api/v1/chat/sessions')).toHaveLength(2);

    const refused = await client.createSession().catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 'internal_error', status: 503 });
    expect(calls.filter((call) => call === 'POST /api/v1/chat/sessions')).toHaveLength(1);
  });
});

describe('ParleyClient: admission (§2)', () => {
  it('keeps one turn_id across its own retries: the server stores one turn', async () => {
    const turnBodies: string[] = [];
    let lost = false;
    const client = newClient({
      fetch: async (input, init) => {
        const isAdmission = urlOf(input).endsWith('/api/v1/chat/turns');
        if (isAdmission && typeof init?.body === 'string') turnBodies.push(init.body);
        const response = await fetch(input, init);
        if (isAdmission && !lost) {
          // The server admitted the turn, but its answer never reaches the client.
          lost = true;
          await response.text();
          throw new TypeError('fetch failed: connection reset');
        }
        return response;
      },
    });
    const admission = await client.admitTurn({ message: 'only once please' });
    expect(admission).toMatchObject({ state: 'accepted', sequence: 1 });
    expect(admission.turn_id).toMatch(/^turn_[A-Za-z0-9_-]+$/);
    expect(turnBodies).toHaveLength(2);
    expect(turnBodies[1]).toBe(turnBodies[0]);
    expect(JSON.parse(turnBodies[0] as string)).toMatchObject({ turn_id: admission.turn_id });

    // The same turn sent twice more through the transport itself: the same answer again.
    const body = { turn_id: admission.turn_id, message: 'only once please' };
    const again = await client.http.request('POST', '/api/v1/chat/turns', {
      body,
      idempotent: true,
    });
    expect(again).toEqual(admission);
    const retried = await client.http.request('POST', '/api/v1/chat/turns', {
      body: { ...body, session_id: admission.session_id },
      idempotent: true,
    });
    expect(retried).toEqual(admission);
    const conflict = await client
      .admitTurn({ turnId: admission.turn_id, message: 'something else' })
      .catch((error: unknown) => error);
    expect(conflict).toMatchObject({ code: 'turn_conflict', status: 409 });

    await waitIdle(client, admission.session_id);
    const transcript = await client.listMessages(admission.session_id);
    const users = transcript.items.filter((message) => message.role === 'user');
    expect(users).toHaveLength(1);
    expect(users[0]).toMatchObject({ turn_id: admission.turn_id, content: 'only once please' });
    expect(transcript.items.filter((message) => message.role === 'assistant')).toHaveLength(1);

    // Each admission makes its own key.
    const other = await client.admitTurn({ sessionId: admission.session_id, message: 'next' });
    expect(other.turn_id).not.toBe(admission.turn_id);
    await waitIdle(client, admission.session_id);
  });
});

describe('ParleyClient: subscribe (§3, §7)', () => {
  it('receives the whole reply in order, advances its cursor after the handler, stops after done', async () => {
    const client = newClient();
    const admission = await client.admitTurn({ message: 'stream this reply to me' });
    const seen = record(client, admission.session_id);
    const stop = await seen.subscription.whenStopped();
    expect(stop).toMatchObject({ state: 'closed', reason: 'settled' });

    const types = seen.types();
    expect(types[0]).toBe('message');
    expect(types.at(-1)).toBe('done');
    expect(types.filter((type) => type === 'done')).toHaveLength(1);
    const done = seen.events.at(-1);
    if (done?.type !== 'done') throw new Error('the last event is not done');
    expect(done.turn_ids).toEqual([admission.turn_id]);
    expect(replyText(seen.events)).toBe('You said: stream this reply to me');
    expect(done.final_message.content).toBe('You said: stream this reply to me');

    expect(sequences(seen.events)).toEqual(range(1, done.sequence));
    // While a handler ran, the cursor still named the previous event.
    expect(seen.cursorAtHandler).toEqual(range(0, done.sequence - 1));
    expect(seen.subscription.cursor).toBe(done.sequence);
    expect(seen.states.map((change) => change.state)).toEqual(['connecting', 'open', 'closed']);

    // The user acts again: resume picks up after the cursor, nothing twice.
    const second = await client.admitTurn({ sessionId: admission.session_id, message: 'more' });
    seen.subscription.resume();
    await seen.subscription.whenStopped();
    const all = sequences(seen.events);
    expect(all).toEqual(range(1, all.length));
    expect(seen.events.filter((event) => event.type === 'done')).toHaveLength(2);
    expect(seen.events.at(-1)).toMatchObject({ type: 'done', turn_ids: [second.turn_id] });
    const projection = await client.getSession(admission.session_id);
    expect(seen.subscription.cursor).toBe(projection.latest_sequence);
  });

  it('does not stop at an old done while replaying, nor while a later turn is pending', async () => {
    const client = newClient();
    const first = await client.admitTurn({ message: 'first' });
    const sessionId = first.session_id;
    await waitIdle(client, sessionId);
    const second = await client.admitTurn({ sessionId, message: 'second' });
    await waitIdle(client, sessionId);
    const third = await client.admitTurn({ sessionId, message: 'third' });

    const seen = record(client, sessionId, { after: 0 });
    const stop = await seen.subscription.whenStopped();
    expect(stop.reason).toBe('settled');
    const answered = seen.events.flatMap((event) => (event.type === 'done' ? event.turn_ids : []));
    expect(answered).toEqual([first.turn_id, second.turn_id, third.turn_id]);
    const projection = await client.getSession(sessionId);
    expect(sequences(seen.events)).toEqual(range(1, projection.latest_sequence));
  });

  it('keeps one idle stream open for later turns when stopOnTerminal is false', async () => {
    const client = newClient();
    const created = await client.createSession();
    const seen = record(client, created.session_id, { stopOnTerminal: false });
    await seen.waitFor(() => seen.subscription.state === 'open', 'the stream to open');
    await client.admitTurn({ sessionId: created.session_id, message: 'one' });
    await seen.waitFor(() => seen.types().includes('done'), 'the first done');
    await client.admitTurn({ sessionId: created.session_id, message: 'two' });
    await seen.waitFor(
      () => seen.types().filter((type) => type === 'done').length === 2,
      'the second done',
    );
    expect(seen.subscription.state).toBe('open');
    seen.subscription.close();
    const stop = await seen.subscription.whenStopped();
    expect(stop.reason).toBe('closed');
    expect(sequences(seen.events)).toEqual(range(1, seen.events.length));
  });

  it('stops on a handler error without counting the event, and delivers it again on resume', async () => {
    const client = newClient();
    const admission = await client.admitTurn({ message: 'handle me' });
    await waitIdle(client, admission.session_id);
    const delivered: number[] = [];
    let failOn: number | null = 3;
    const subscription = client.subscribe(admission.session_id, {
      backoff: quickBackoff,
      onEvent: (event) => {
        if (event.sequence === failOn) {
          failOn = null;
          throw new Error('the consumer broke');
        }
        delivered.push(event.sequence);
      },
    });
    const broken = await subscription.whenStopped();
    expect(broken).toMatchObject({ reason: 'handler_error', after: 2 });
    expect(broken.error?.message).toBe('the consumer broke');
    expect(subscription.cursor).toBe(2);
    subscription.resume();
    const settled = await subscription.whenStopped();
    expect(settled.reason).toBe('settled');
    const projection = await client.getSession(admission.session_id);
    expect(delivered).toEqual(range(1, projection.latest_sequence));
  });

  it('treats 409 cursor_ahead as a resync: onResync(projection), then continues after latest_sequence', async () => {
    const client = newClient();
    const admission = await client.admitTurn({ message: 'before the resync' });
    const before = await waitIdle(client, admission.session_id);
    const seen = record(client, admission.session_id, { after: 999, stopOnTerminal: false });
    await seen.waitFor(() => seen.resyncs.length === 1, 'the resync');
    expect(seen.resyncs[0]).toMatchObject({
      session_id: admission.session_id,
      latest_sequence: before.latest_sequence,
    });
    await seen.waitFor(() => seen.subscription.state === 'open', 'the reopened stream');
    expect(seen.subscription.cursor).toBe(before.latest_sequence);
    await client.admitTurn({ sessionId: admission.session_id, message: 'after the resync' });
    await seen.waitFor(() => seen.types().includes('done'), 'the reply after the resync');
    expect(seen.events[0]?.sequence).toBe(before.latest_sequence + 1);
    expect(sequences(seen.events)).toEqual(
      range(before.latest_sequence + 1, before.latest_sequence + seen.events.length),
    );
    expect(replyText(seen.events)).toBe('You said: after the resync');
    seen.subscription.close();
  });

  it('closes on an answer that retrying cannot change (404, 401), without reconnecting', async () => {
    const missing = record(newClient(), '01NOSUCHSESSION');
    const stop = await missing.subscription.whenStopped();
    expect(stop.reason).toBe('fatal');
    expect(stop.error).toMatchObject({ code: 'session_not_found', status: 404 });
    expect(missing.states.map((change) => change.state)).toEqual(['connecting', 'closed']);

    const created = await newClient().createSession();
    const anonymous = record(newClient({ apiKey: null }), created.session_id);
    const refused = await anonymous.subscription.whenStopped();
    expect(refused.error).toMatchObject({ code: 'unauthorized', status: 401 });
  });

  it('stops at once when its signal aborts', async () => {
    const client = newClient();
    const created = await client.createSession();
    const controller = new AbortController();
    const seen = record(client, created.session_id, { signal: controller.signal });
    await seen.waitFor(() => seen.subscription.state === 'open', 'the stream to open');
    controller.abort();
    const stop = await seen.subscription.whenStopped();
    expect(stop.reason).toBe('closed');
    expect(seen.subscription.state).toBe('closed');
  });
});

describe('ParleyClient: reconnect and resync against a restarted server', () => {
  const silent = createLogger({ level: 'silent' });
  const both = { api: true, worker: true };

  it('reconnects through a server restart: every sequence exactly once, exactly one done', async () => {
    const fresh = await freshStorage();
    // Slow words and a short grace: the turn is still running when the server stops.
    const env = { PARLEY_DEMO_DELAY_MS: '150' };
    const configOn = (port: number) =>
      testConfig(fresh.storage, { server: { port }, runtime: { shutdown_grace_ms: 100 } }, env);
    let running: Running = await startProcess(configOn(0), both, silent);
    try {
      const url = running.url ?? '';
      const port = Number(new URL(url).port);
      const client = new ParleyClient({ baseUrl: url, backoff: { initialMs: 100, maxMs: 1000 } });
      const created = await client.createSession();
      const seen = record(client, created.session_id, { backoff: { initialMs: 100, maxMs: 1000 } });
      await seen.waitFor(() => seen.subscription.state === 'open', 'the stream to open');
      const words = Array.from({ length: 40 }, (_, index) => `word${index}`).join(' ');
      const admission = await client.admitTurn({ sessionId: created.session_id, message: words });
      await seen.waitFor(
        () => seen.types().filter((type) => type === 'text_delta').length >= 3,
        'the first words of the reply',
      );

      await running.stop();
      running = await startProcess(configOn(port), both, silent);

      const stop = await seen.subscription.whenStopped();
      expect(stop.reason).toBe('settled');
      const projection = await client.getSession(created.session_id);
      expect(sequences(seen.events)).toEqual(range(1, projection.latest_sequence));
      const dones = seen.events.filter((event) => event.type === 'done');
      expect(dones).toHaveLength(1);
      expect(dones[0]).toMatchObject({ turn_ids: [admission.turn_id] });
      const expected = `You said: ${words}`;
      expect(dones[0]).toMatchObject({ final_message: { content: expected } });
      // The stopped worker's partial attempt was abandoned; only the last attempt counts.
      expect(seen.types()).toContain('attempt_reset');
      expect(replyText(seen.events)).toBe(expected);

      const states = seen.states.map((change) => change.state);
      expect(states).toContain('reconnecting');
      expect(states.filter((state) => state === 'open').length).toBeGreaterThanOrEqual(2);
      const reconnect = seen.states.find((change) => change.state === 'reconnecting');
      expect(reconnect?.attempt).toBe(1);
      expect(reconnect?.delayMs).toBeGreaterThan(0);
      expect(seen.typing).toBeGreaterThan(0);
      await checkJournalInvariants(running.db);
    } finally {
      await running.stop();
      await fresh.drop();
    }
  });

  it('resyncs after history was pruned while it was away (410): onResync, then after latest_sequence', async () => {
    const pruned = await startTestServer();
    try {
      const client = new ParleyClient({ baseUrl: pruned.url, backoff: quickBackoff });
      const first = await client.admitTurn({ message: 'first turn' });
      const sessionId = first.session_id;
      const seen = record(client, sessionId);
      expect((await seen.subscription.whenStopped()).reason).toBe('settled');
      const away = seen.subscription.cursor;

      // While this client is away: another turn completes, then history is pruned.
      const other = await request(pruned.url, 'POST', '/api/v1/chat/turns', {
        session_id: sessionId,
        turn_id: 'turn_from_elsewhere',
        message: 'while you were away',
      });
      expect(other.status).toBe(202);
      const idle = await waitIdle(client, sessionId);
      expect(idle.latest_sequence).toBeGreaterThan(away);
      const prune = await request(pruned.url, 'POST', '/api/v1/admin/prune', {
        older_than_seconds: 0,
      });
      expect(prune.status).toBe(200);
      const after = await client.getSession(sessionId);
      expect(after.earliest_sequence).toBeGreaterThan(away + 1);
      const latest = after.latest_sequence;

      const countBefore = seen.events.length;
      seen.subscription.resume();
      await seen.waitFor(() => seen.resyncs.length === 1, 'onResync');
      expect(seen.resyncs[0]).toMatchObject({ session_id: sessionId, latest_sequence: latest });
      await seen.waitFor(() => seen.subscription.state === 'open', 'the reopened stream');
      expect(seen.subscription.cursor).toBe(latest);

      const third = await client.admitTurn({ sessionId, message: 'after the prune' });
      expect((await seen.subscription.whenStopped()).reason).toBe('settled');
      const resumed = seen.events.slice(countBefore);
      // Nothing of the pruned range was delivered or invented; the stream went on after it.
      expect(sequences(resumed)).toEqual(range(latest + 1, latest + resumed.length));
      expect(resumed.filter((event) => event.type === 'done')).toHaveLength(1);
      expect(resumed.at(-1)).toMatchObject({ type: 'done', turn_ids: [third.turn_id] });
      expect(replyText(resumed)).toBe('You said: after the prune');
    } finally {
      await pruned.close();
    }
  });
});
