import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readEvents } from '../src/store/readEvents.js';
import { checkJournalInvariants } from './support/invariants.js';
import { until } from './support/poll.js';
import { ProviderServer } from './support/providerServer.js';
import { providerKey } from './support/providerKinds.js';
import { request, startTestServer, type TestServer } from './support/server.js';
import { SseClient } from './support/sse.js';

/**
 * Issue 7 through the drain loop: real provider clients (the fixture server plays
 * Anthropic and an OpenAI-compatible gateway) and the demo model, end to end — reasoning
 * journaled apart from the reply, usage and cost billed per call, provider failures with
 * their codes and retries, the scope gate, images and the vision fallback.
 */

let providers: ProviderServer;
let server: TestServer;
const claudePath = '/v1/messages';
const compatPath = '/v1/chat/completions';

/** The smallest valid PNG (1×1). */
const png = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

beforeAll(async () => {
  providers = await ProviderServer.start();
  // The gateway's model list, read by the catalog sync at start: `seer-1` sees images
  // (the `models:` override below says so).
  providers.on('GET', '/v1/models', {
    json: { object: 'list', data: [{ id: 'seer-1', object: 'model' }] },
  });
  server = await startTestServer(
    {
      providers: {
        demo: { kind: 'demo' },
        claude: {
          kind: 'anthropic',
          api_key_env: 'TEST_PROVIDER_KEY',
          base_url: `${providers.url}/v1`,
        },
        compat: {
          kind: 'openai_compatible',
          api_key_env: 'TEST_PROVIDER_KEY',
          base_url: `${providers.url}/v1`,
        },
      },
      pricing: { 'claude/claude-sonnet-4-5': { input: 3, output: 15, cached_input: 0.3 } },
      models: { 'compat/seer-1': { vision: true, context_window: 8192 } },
      agents: {
        default: { model: 'demo/echo' },
        thinker: { model: 'claude/claude-sonnet-4-5' },
        seer: { model: 'demo/vision' },
        gateway: { model: 'compat/seer-1', vision: 'auto' },
        gated: {
          model: 'demo/echo',
          gate: { model: 'demo/gate', topic: 'orders', redirect: 'I can only help with orders.' },
        },
        brittle: {
          model: 'demo/echo',
          gate: { model: 'compat/gatekeeper', topic: 'orders', redirect: 'Orders only, sorry.' },
        },
      },
      runtime: { retry_base_ms: 10 },
    },
    { TEST_PROVIDER_KEY: providerKey },
  );
});
afterAll(async () => {
  await checkJournalInvariants(server.db);
  await server.close();
  await providers.close();
});

let counter = 0;
async function turn(agent: string, message: string, extra: Record<string, unknown> = {}) {
  const turnId = `mr_${Date.now()}_${counter++}`;
  const admitted = await request(server.url, 'POST', '/api/v1/chat/turns', {
    turn_id: turnId,
    agent,
    message,
    ...extra,
  });
  expect(admitted.status, JSON.stringify(admitted.body)).toBe(202);
  const sessionId = admitted.body.session_id as string;
  const events = await until(
    () => readEvents(server.db, sessionId, 0, 10_000),
    (list) =>
      list.some(
        (event) =>
          ['done', 'error', 'cancelled'].includes(event.type) &&
          'turn_ids' in event &&
          event.turn_ids.includes(turnId),
      ),
    `the end of ${turnId}`,
  );
  return { sessionId, turnId, events: events as any[] };
}

describe('reasoning', () => {
  it('is journaled as reasoning_delta, never in the reply, and streamed only to who asks', async () => {
    providers.reset();
    providers.on('POST', claudePath, { stream: 'anthropic/thinking.txt' });
    const { sessionId, events } = await turn('thinker', 'what is 2+2?');
    const done = events.find((event) => event.type === 'done');
    const reasoning = events
      .filter((event) => event.type === 'reasoning_delta')
      .map((event) => event.delta)
      .join('');
    expect(reasoning).toContain('That is 4.');
    expect(done.final_message.content).toBe('2 + 2 = 4.');
    expect(done.final_message.content).not.toContain('The user asks');
    // A client that did not ask gets the events without their text (sequences stay gapless).
    const plain = await SseClient.open(server.url, sessionId);
    await plain.waitForType('done');
    plain.close();
    const bare = plain.events.filter((event) => event.type === 'reasoning_delta');
    expect(bare.length).toBeGreaterThan(0);
    expect(bare.every((event) => event.delta === undefined)).toBe(true);
    const sequences = plain.events.map((event) => event.sequence);
    expect(sequences).toEqual(sequences.map((_, index) => index + 1));
    // One that asks gets the text.
    const controller = new AbortController();
    const asked = await fetch(
      `${server.url}/api/v1/chat/sessions/${sessionId}/events?include=reasoning`,
      { signal: controller.signal },
    );
    let text = '';
    const decoder = new TextDecoder();
    for await (const chunk of asked.body as ReadableStream<Uint8Array>) {
      text += decoder.decode(chunk, { stream: true });
      if (text.includes('event: done')) break;
    }
    controller.abort();
    const frames = text.split('\n\n').filter((frame) => frame.includes('event: reasoning_delta'));
    expect(frames.length).toBeGreaterThan(0);
    expect(frames.join('')).toContain('The user asks for 2+2.');
  });
});

describe('usage and cost', () => {
  it('bills each call with its tokens and price, per turn, per session and by model', async () => {
    providers.reset();
    providers.on('POST', claudePath, { stream: 'anthropic/thinking.txt' });
    const { sessionId, turnId, events } = await turn('thinker', 'and 3+3?');
    const usage = events.filter((event) => event.type === 'usage');
    expect(usage).toHaveLength(1);
    expect(usage[0]).toMatchObject({
      model: 'claude/claude-sonnet-4-5',
      purpose: 'reply',
      outcome: 'ok',
      input_tokens: expect.any(Number),
      output_tokens: expect.any(Number),
      cached_input_tokens: expect.any(Number),
      reasoning_tokens: expect.any(Number),
    });
    const call = usage[0];
    const expected =
      ((call.input_tokens - call.cached_input_tokens) * 3 +
        call.cached_input_tokens * 0.3 +
        call.output_tokens * 15) /
      1e6;
    expect(call.cost_usd).toBeCloseTo(expected, 10);
    const transcript = await request(
      server.url,
      'GET',
      `/api/v1/chat/sessions/${sessionId}/messages`,
    );
    const reply = transcript.body.items.find((item: any) => item.role === 'assistant');
    expect(reply.turn_id).toBe(turnId);
    expect(reply.usage).toMatchObject({
      input_tokens: call.input_tokens,
      output_tokens: call.output_tokens,
    });
    const projection = await request(server.url, 'GET', `/api/v1/chat/sessions/${sessionId}`);
    expect(projection.body.usage.input_tokens).toBe(call.input_tokens);
    expect(projection.body.usage.cost_usd).toBeCloseTo(expected, 8);
    const report = await request(server.url, 'GET', '/api/v1/usage?group_by=model');
    const row = report.body.items.find((item: any) => item.key === 'claude/claude-sonnet-4-5');
    expect(row.input_tokens).toBeGreaterThanOrEqual(call.input_tokens);
    const metrics = String((await request(server.url, 'GET', '/metrics')).body);
    expect(metrics).toMatch(
      /parley_tokens_total\{[^}]*model="claude\/claude-sonnet-4-5"[^}]*kind="output"/,
    );
  });
});

describe('provider failures', () => {
  it('ends the turn with provider_auth on a 401, never with the provider’s body', async () => {
    providers.reset();
    providers.on('POST', claudePath, {
      status: 401,
      json: { type: 'error', error: { type: 'authentication_error', message: 'SECRET-BODY-401' } },
    });
    const { events } = await turn('thinker', 'hello');
    const error = events.find((event) => event.type === 'error');
    expect(error).toMatchObject({ code: 'provider_auth' });
    expect(JSON.stringify(events)).not.toContain('SECRET-BODY-401');
    expect(providers.requests.filter((r) => r.path === claudePath)).toHaveLength(1);
  });

  it('retries a 429 (honouring retry-after) and a stream cut mid-way, then answers', async () => {
    providers.reset();
    providers.on(
      'POST',
      claudePath,
      {
        status: 429,
        headers: { 'retry-after': '0' },
        json: { type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } },
      },
      { stream: 'anthropic/thinking.txt', cutAfter: '2 + 2 = ' },
      { stream: 'anthropic/thinking.txt' },
    );
    const { events } = await turn('thinker', 'hello again');
    expect(events.find((event) => event.type === 'done')?.final_message.content).toBe('2 + 2 = 4.');
    expect(providers.requests.filter((r) => r.path === claudePath)).toHaveLength(3);
    expect(events.filter((event) => event.type === 'attempt_reset')).toHaveLength(1);
    // The two broken-off calls are billed too.
    expect(events.filter((event) => event.type === 'usage').map((event) => event.outcome)).toEqual([
      'failed',
      'failed',
      'ok',
    ]);
  });

  it('retries a context_length refusal once with a tighter history, then gives up with its code', async () => {
    providers.reset();
    const tooLong = {
      status: 400,
      json: {
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message: 'prompt is too long: 300000 tokens > 200000 maximum',
        },
      },
    };
    providers.on('POST', claudePath, tooLong, tooLong, tooLong);
    const { events } = await turn('thinker', 'a long story');
    expect(events.find((event) => event.type === 'error')).toMatchObject({
      code: 'context_length',
    });
    expect(providers.requests.filter((r) => r.path === claudePath)).toHaveLength(2);
  });
});

describe('the scope gate', () => {
  it('lets an on-topic message through to the model', async () => {
    const { events } = await turn('gated', 'where is my order?');
    expect(events.find((event) => event.type === 'done').final_message.content).toBe(
      'You said: where is my order?',
    );
    expect(events.some((event) => event.type === 'gate')).toBe(false);
    const usage = events.filter((event) => event.type === 'usage');
    expect(usage.map((event) => event.purpose)).toEqual(['gate', 'reply']);
  });

  it('answers an off-topic message with the redirect; the main model never runs', async () => {
    const { events } = await turn('gated', 'tell me a joke /offtopic');
    const done = events.find((event) => event.type === 'done');
    expect(done.final_message.content).toBe('I can only help with orders.');
    expect(events.find((event) => event.type === 'gate')).toMatchObject({
      on_topic: false,
      failed: false,
    });
    expect(events.some((event) => event.type === 'text_delta')).toBe(false);
    expect(events.filter((event) => event.type === 'usage').map((event) => event.purpose)).toEqual([
      'gate',
    ]);
  });

  it('is fail-closed: a gate that errors gives the redirect, saying why', async () => {
    providers.reset();
    providers.on('POST', compatPath, { status: 500, json: { error: { message: 'boom' } } });
    const { events } = await turn('brittle', 'where is my order?');
    expect(events.find((event) => event.type === 'done').final_message.content).toBe(
      'Orders only, sorry.',
    );
    const gate = events.find((event) => event.type === 'gate');
    expect(gate).toMatchObject({ on_topic: false, failed: true });
    expect(gate.reason).toMatch(/^gate failed/);
  });

  it('never gates a pressed option', async () => {
    const first = await turn('gated', 'order status?\n/options red|green');
    const offer = first.events.find((event) => event.type === 'done').final_message.options;
    const pressed = await request(server.url, 'POST', '/api/v1/chat/turns', {
      session_id: first.sessionId,
      turn_id: `press_${Date.now()}`,
      message: '/offtopic',
      option: { request_id: offer.request_id, value: 'green' },
    });
    expect(pressed.status).toBe(202);
    const events = await until(
      () => readEvents(server.db, first.sessionId, 0, 10_000),
      (list) => list.filter((event) => event.type === 'done').length === 2,
      'the pressed option answered',
    );
    const done = (events as any[]).filter((event) => event.type === 'done')[1];
    expect(done.final_message.content).toContain('Selected option: green');
    expect(events.some((event) => event.type === 'gate')).toBe(false);
  });
});

describe('images', () => {
  async function upload(sessionId: string): Promise<string> {
    const response = await fetch(`${server.url}/api/v1/chat/sessions/${sessionId}/attachments`, {
      method: 'POST',
      headers: { 'content-type': 'image/png' },
      body: png,
    });
    expect(response.status).toBe(201);
    return ((await response.json()) as { attachment_id: string }).attachment_id;
  }

  async function session(agent: string): Promise<string> {
    return (await request(server.url, 'POST', '/api/v1/chat/sessions', { agent })).body.session_id;
  }

  async function turnWith(sessionId: string, message: string, attachments: string[]) {
    const turnId = `img_${Date.now()}_${counter++}`;
    const admitted = await request(server.url, 'POST', '/api/v1/chat/turns', {
      session_id: sessionId,
      turn_id: turnId,
      message,
      attachments,
    });
    return { admitted, turnId };
  }

  it('go to a vision model, and a note goes to one without vision', async () => {
    const seer = await session('seer');
    const seen = await turnWith(seer, 'what is this?', [await upload(seer)]);
    expect(seen.admitted.status).toBe(202);
    const events = await until(
      () => readEvents(server.db, seer, 0, 10_000),
      (list) => list.some((event) => event.type === 'done'),
      'the vision reply',
    );
    expect((events as any[]).find((event) => event.type === 'done').final_message.content).toBe(
      `I see an image (image/png, ${png.length} bytes).`,
    );
    const blind = await session('default');
    await turnWith(blind, 'and this?', [await upload(blind)]);
    const blindEvents = await until(
      () => readEvents(server.db, blind, 0, 10_000),
      (list) => list.some((event) => event.type === 'done'),
      'the blind reply',
    );
    const content = (blindEvents as any[]).find((event) => event.type === 'done').final_message
      .content;
    expect(content).toContain('An image was attached (image/png');
  });

  it('refuses an attachment of another session with 404, writing nothing', async () => {
    const mine = await session('seer');
    const theirs = await session('seer');
    const id = await upload(theirs);
    const refused = await turnWith(mine, 'look', [id]);
    expect(refused.admitted.status).toBe(404);
    expect(refused.admitted.body.error).toBe('attachment_not_found');
    const turns = await server.db.query('select 1 from turns where turn_id = $1', [refused.turnId]);
    expect(turns.rowCount).toBe(0);
  });

  it('retries a failing vision call once without the images, and the turn still answers', async () => {
    providers.reset();
    providers.on(
      'POST',
      compatPath,
      { status: 400, json: { error: { message: 'image input is not supported here' } } },
      { stream: 'openai-chat/text.txt' },
    );
    const sessionId = await session('gateway');
    await turnWith(sessionId, 'describe it', [await upload(sessionId)]);
    const events = await until(
      () => readEvents(server.db, sessionId, 0, 10_000),
      (list) => list.some((event) => ['done', 'error'].includes(event.type)),
      'the fallback reply',
    );
    expect((events as any[]).some((event) => event.type === 'done')).toBe(true);
    const calls = providers.requests.filter((r) => r.path === compatPath);
    expect(calls).toHaveLength(2);
    expect(calls[0]?.body).toContain('image_url');
    expect(calls[1]?.body).not.toContain('image_url');
    expect(calls[1]?.body).toContain('An image was attached');
  });
});
