import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProcess, type Running } from '../src/cli/start.js';
import { createLogger } from '../src/log.js';
import { basePrompt } from '../src/runtime/basePrompt.js';
import type { RuntimeDeps } from '../src/runtime/deps.js';
import { collectTurns } from '../src/store/collectTurns.js';
import { readEvents } from '../src/store/readEvents.js';
import { testConfig } from './support/config.js';
import { freshStorage } from './support/db.js';
import { checkJournalInvariants } from './support/invariants.js';
import { request } from './support/server.js';

let running: Running;
let url: string;
let drop: () => Promise<void>;
let config: ReturnType<typeof testConfig>;
const reviewer = { authorization: 'Bearer reviewer-key' };
const observer = { authorization: 'Bearer observer-key' };

beforeAll(async () => {
  const fresh = await freshStorage();
  drop = fresh.drop;
  config = testConfig(
    fresh.storage,
    {
      auth: {
        keys: [
          { key_env: 'K_REVIEWER', tenant: 'acme', user: 'rita', roles: ['reviewer'] },
          { key_env: 'K_OBSERVER', tenant: 'acme', user: 'oscar', roles: ['observer'] },
        ],
      },
      agents: {
        default: { model: 'demo/echo', trigger_roles: ['reviewer'] },
        closer: { model: 'demo/echo', completion_text: 'Thanks, your request is noted.' },
        replacer: {
          model: 'demo/echo',
          completion_text: 'Thanks, your request is noted.',
          completion_replaces: 'reply',
        },
      },
    },
    { K_REVIEWER: 'reviewer-key', K_OBSERVER: 'observer-key' },
  );
  running = await startProcess(
    config,
    { api: true, worker: true },
    createLogger({ level: 'silent' }),
  );
  url = running.url as string;
});
afterAll(async () => {
  await checkJournalInvariants(running.db);
  await running.stop();
  await drop();
});

async function events(sessionId: string): Promise<any[]> {
  return readEvents(running.db, sessionId, 0, 100_000);
}

async function waitFor<T>(probe: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const value = await probe();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('rooms and trigger roles', () => {
  it('stores and streams a post without a trigger role, runs no turn for it, and shows it as context', async () => {
    const first = await request(
      url,
      'POST',
      '/api/v1/chat/turns',
      { turn_id: 'r_1', message: 'please review' },
      reviewer,
    );
    expect(first.body.state).toBe('accepted');
    const sessionId = first.body.session_id;
    await waitFor(
      () => events(sessionId),
      (list) => list.some((event) => event.type === 'done'),
    );
    const post = await request(
      url,
      'POST',
      '/api/v1/chat/turns',
      { session_id: sessionId, turn_id: 'o_1', message: 'looks fine to me' },
      observer,
    );
    expect(post.status).toBe(202);
    expect(post.body.state).toBe('stored');
    const again = await request(
      url,
      'POST',
      '/api/v1/chat/turns',
      { session_id: sessionId, turn_id: 'o_1', message: 'looks fine to me' },
      observer,
    );
    expect(again.body).toEqual(post.body);
    await new Promise((resolve) => setTimeout(resolve, 500));
    let list = await events(sessionId);
    expect(list.filter((event) => event.type === 'turn_started')).toHaveLength(1);
    const stored = list.find((event) => event.turn_id === 'o_1');
    expect(stored).toMatchObject({
      type: 'message',
      message: { author: 'oscar', content: 'looks fine to me' },
    });
    const projection = await request(
      url,
      'GET',
      `/api/v1/chat/sessions/${sessionId}`,
      undefined,
      reviewer,
    );
    expect(projection.body).toMatchObject({ state: 'idle', queued_turns: 0 });

    // The next real turn sees the stored post in its history, labelled with its author.
    await request(
      url,
      'POST',
      '/api/v1/chat/turns',
      { session_id: sessionId, turn_id: 'r_2', message: 'ship it?' },
      reviewer,
    );
    list = await waitFor(
      () => events(sessionId),
      (found) => found.filter((event) => event.type === 'done').length === 2,
    );
    const done = list.filter((event) => event.type === 'done');
    expect(done.map((event) => event.turn_ids)).toEqual([['r_1'], ['r_2']]);
    expect(list.some((event) => (event.turn_ids ?? []).includes('o_1'))).toBe(false);
  });

  it('labels each author in the prompt when several people are in the room', async () => {
    const first = await request(
      url,
      'POST',
      '/api/v1/chat/turns',
      { turn_id: 'p_1', message: 'hello' },
      reviewer,
    );
    const sessionId = first.body.session_id;
    await waitFor(
      () => events(sessionId),
      (list) => list.some((event) => event.type === 'done'),
    );
    await request(
      url,
      'POST',
      '/api/v1/chat/turns',
      { session_id: sessionId, turn_id: 'p_o', message: 'I agree' },
      observer,
    );
    // Build the prompt the worker would build for a pending turn (no worker involved):
    // the history its attempt reads, then the folded turn.
    const history = (
      await running.db.query<any>(
        `select role, author, coalesce(raw_content, content) as content, turn_id, sequence,
                null as attachments
           from messages where session_id = $1 order by sequence`,
        [sessionId],
      )
    ).rows;
    const turns = [
      {
        turn_id: 'x',
        position: 99,
        admitted_sequence: 1_000_000,
        message_id: 'm',
        author: 'rita',
        content: 'next',
        option: null,
        attachments: null,
      },
    ];
    const deps = {
      db: running.db,
      config,
      log: createLogger({ level: 'silent' }),
    } as unknown as RuntimeDeps;
    const { prompt } = await basePrompt(
      deps,
      { sessionId, tenant: 'acme', token: 'none' },
      config.agents.default!,
      { history, preferences: {} },
      turns,
    );
    const texts = prompt.map((message) =>
      typeof message.content === 'string'
        ? message.content
        : (message.content[0] as { text: string }).text,
    );
    expect(texts).toContain('oscar: I agree');
    expect(texts).toContain('rita: hello');
    expect(texts[texts.length - 1]).toBe('next');
    expect((await collectTurns(running.db, sessionId, 10)).queued).toEqual([]);
  });
});

describe('options', () => {
  it('offers options with a reply; the first press is applied and locks them', async () => {
    const first = await request(
      url,
      'POST',
      '/api/v1/chat/turns',
      { turn_id: 'opt_1', message: '/options red|green|blue' },
      reviewer,
    );
    const sessionId = first.body.session_id;
    let list = await waitFor(
      () => events(sessionId),
      (found) => found.some((event) => event.type === 'done'),
    );
    const offer = list.find((event) => event.type === 'done').final_message.options;
    expect(offer.choices).toEqual(['red', 'green', 'blue']);
    expect(typeof offer.request_id).toBe('string');

    const press = (turnId: string, value: string, requestId = offer.request_id) =>
      request(
        url,
        'POST',
        '/api/v1/chat/turns',
        {
          session_id: sessionId,
          turn_id: turnId,
          message: '',
          option: { request_id: requestId, value },
        },
        reviewer,
      );
    const invalid = await press('opt_bad', 'purple');
    expect(invalid.status).toBe(400);
    expect(invalid.body.error).toBe('invalid_option');
    const unknown = await press('opt_unknown', 'red', 'req_nope');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe('option_not_found');
    const noSession = await request(
      url,
      'POST',
      '/api/v1/chat/turns',
      { turn_id: 'opt_ns', message: '', option: { request_id: offer.request_id, value: 'red' } },
      reviewer,
    );
    expect(noSession.status).toBe(400);

    const chosen = await press('opt_2', 'green');
    expect(chosen.status).toBe(202);
    expect(chosen.body.state).toBe('accepted');
    expect((await press('opt_2', 'green')).body).toEqual(chosen.body);
    const second = await press('opt_3', 'blue');
    expect(second.status).toBe(409);
    expect(second.body.error).toBe('option_locked');

    list = await waitFor(
      () => events(sessionId),
      (found) => found.filter((event) => event.type === 'done').length === 2,
    );
    const reply = list.filter((event) => event.type === 'done')[1];
    expect(reply.turn_ids).toEqual(['opt_2']);
    expect(reply.final_message.content).toBe('You said: Selected option: green');
    const pressed = list.find((event) => event.type === 'message' && event.turn_id === 'opt_2');
    expect(pressed.message.option).toEqual({ request_id: offer.request_id, value: 'green' });
  });
});

describe('completion_text', () => {
  it('shows the fixed closing text while the raw reply stays in the durable history', async () => {
    const first = await request(
      url,
      'POST',
      '/api/v1/chat/turns',
      { turn_id: 'close_1', agent: 'closer', message: 'file my request' },
      reviewer,
    );
    const sessionId = first.body.session_id;
    const list = await waitFor(
      () => events(sessionId),
      (found) => found.some((event) => event.type === 'done'),
    );
    const done = list.find((event) => event.type === 'done');
    expect(done.final_message.content).toBe('Thanks, your request is noted.');
    const transcript = await request(
      url,
      'GET',
      `/api/v1/chat/sessions/${sessionId}/messages`,
      undefined,
      reviewer,
    );
    expect(transcript.body.items[0].content).toBe('Thanks, your request is noted.');
    const raw = await running.db.query<{ raw_content: string }>(
      `select raw_content from messages where session_id = $1 and role = 'assistant'`,
      [sessionId],
    );
    expect(raw.rows[0]?.raw_content).toBe('You said: file my request');
  });

  async function closingOf(turnId: string, agent: string, message: string) {
    const admitted = await request(
      url,
      'POST',
      '/api/v1/chat/turns',
      { turn_id: turnId, agent, message },
      reviewer,
    );
    const list = await waitFor(
      () => events(admitted.body.session_id),
      (found) => found.some((event) => event.type === 'done'),
    );
    return list.find((event) => event.type === 'done').final_message.content;
  }

  it("replaces only the reply's closing sentence by default, the whole reply when asked", async () => {
    const message = 'I filed it. Is there anything else?';
    expect(await closingOf('close_2', 'closer', message)).toBe(
      'You said: I filed it. Thanks, your request is noted.',
    );
    expect(await closingOf('close_3', 'replacer', message)).toBe('Thanks, your request is noted.');
  });
});
