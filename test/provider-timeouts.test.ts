import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileConfig } from '../src/config/load.js';
import { createModelRegistry } from '../src/providers/registry.js';
import { ProviderFailure, streamStep } from '../src/runtime/modelStep.js';
import { readEvents } from '../src/store/readEvents.js';
import { checkJournalInvariants } from './support/invariants.js';
import { until } from './support/poll.js';
import { ProviderServer } from './support/providerServer.js';
import { providerKey } from './support/providerKinds.js';
import { request, startTestServer, type TestServer } from './support/server.js';

/**
 * The reply step's deadlines (providers.md, "Timeouts"): a provider that sends nothing,
 * or stalls mid-stream, has its request aborted at `first_token_timeout_ms` /
 * `idle_timeout_ms` — its socket closed — and the attempt ends as a retryable
 * `provider_timeout`: retried, and the turn's error code once retries run out. The
 * session never stays `running` on a stalled stream.
 */

const chatPath = '/v1/chat/completions';
let providers: ProviderServer;
let server: TestServer;

beforeAll(async () => {
  providers = await ProviderServer.start();
  server = await startTestServer(
    {
      providers: {
        demo: { kind: 'demo', idle_timeout_ms: 300 },
        compat: {
          kind: 'openai_compatible',
          api_key_env: 'TEST_PROVIDER_KEY',
          base_url: `${providers.url}/v1`,
          // Generous first-token timeout: the machine is shared, a slow first chunk must
          // not look like a stall; the test that needs it to fire waits for it.
          first_token_timeout_ms: 3000,
          idle_timeout_ms: 400,
        },
      },
      agents: {
        default: { model: 'demo/echo' },
        remote: { model: 'compat/gpt-4.1-mini' },
      },
      runtime: { retry_base_ms: 10, retry_attempts: 2 },
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
async function turn(agent: string, message: string) {
  const turnId = `pt_${Date.now()}_${counter++}`;
  const admitted = await request(server.url, 'POST', '/api/v1/chat/turns', {
    turn_id: turnId,
    agent,
    message,
  });
  expect(admitted.status, JSON.stringify(admitted.body)).toBe(202);
  const sessionId = admitted.body.session_id as string;
  const events = await until(
    () => readEvents(server.db, sessionId, 0, 10_000),
    (list) => list.some((event) => ['done', 'error', 'cancelled'].includes(event.type)),
    `the end of ${turnId}`,
  );
  const session = await until(
    () => request(server.url, 'GET', `/api/v1/chat/sessions/${sessionId}`),
    (answer) => answer.body.state !== 'running',
    'the session to leave running',
  );
  return { events: events as any[], state: session.body.state as string };
}

describe('provider timeouts', () => {
  it('are provider keys with documented defaults', () => {
    const config = compileConfig({ providers: { demo: { kind: 'demo' } } });
    expect(config.providers.demo).toMatchObject({
      firstTokenTimeoutMs: 60_000,
      idleTimeoutMs: 30_000,
    });
    expect(compileConfig({}).providers.demo).toMatchObject({
      firstTokenTimeoutMs: 60_000,
      idleTimeoutMs: 30_000,
    });
    expect(() =>
      compileConfig({ providers: { demo: { kind: 'demo', idle_timeout_ms: -1 } } }),
    ).toThrow(/providers\.demo\.idle_timeout_ms/);
  });

  it('abort a stream that stalls after two chunks: the request is closed, the attempt a retryable provider_timeout', async () => {
    providers.reset();
    providers.on('POST', chatPath, { stream: 'openai-chat/text.txt', stallAfter: '"Hello"' });
    const model = createModelRegistry(server.config, { TEST_PROVIDER_KEY: providerKey })(
      'compat',
      'gpt-4.1-mini',
    );
    const deltas: string[] = [];
    const outcome = await streamStep(
      model,
      [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
      { push: (delta: string) => void deltas.push(delta) },
      new AbortController().signal,
    ).catch((error: unknown) => error);
    expect(outcome).toBeInstanceOf(ProviderFailure);
    expect(outcome).toMatchObject({ code: 'provider_timeout', isRetryable: true });
    expect(deltas).toEqual(['Hello']);
    await until(
      () => providers.requests[0]?.abandoned,
      (abandoned) => abandoned === true,
      'the provider to see its request closed',
    );
  });

  it('abort a request that gets no answer at all within first_token_timeout_ms', async () => {
    providers.reset();
    providers.on('POST', chatPath, { hang: true });
    const model = createModelRegistry(server.config, { TEST_PROVIDER_KEY: providerKey })(
      'compat',
      'gpt-4.1-mini',
    );
    const outcome = await streamStep(
      model,
      [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
      { push: () => {} },
      new AbortController().signal,
    ).catch((error: unknown) => error);
    expect(outcome).toMatchObject({ code: 'provider_timeout', isRetryable: true });
    await until(
      () => providers.requests[0]?.abandoned,
      (abandoned) => abandoned === true,
      'the provider to see its request closed',
    );
  });

  it('end a stalled attempt and retry it: the turn completes on the next attempt', async () => {
    providers.reset();
    providers.on(
      'POST',
      chatPath,
      { stream: 'openai-chat/text.txt', stallAfter: '"Hello"' },
      { stream: 'openai-chat/text.txt' },
    );
    const { events, state } = await turn('remote', 'hello');
    expect(state).toBe('idle');
    expect(events.find((event) => event.type === 'done')?.final_message.content).toBe(
      'Hello, world!',
    );
    const calls = providers.requests.filter((recorded) => recorded.path === chatPath);
    expect(calls.map((recorded) => recorded.abandoned)).toEqual([true, false]);
    // The stalled attempt had journaled "Hello": clients are told to drop it.
    expect(events.filter((event) => event.type === 'attempt_reset')).toHaveLength(1);
    expect(events.filter((event) => event.type === 'usage').map((event) => event.outcome)).toEqual([
      'failed',
      'ok',
    ]);
  });

  it('end the turn with error provider_timeout when every attempt stalls (the demo /stall)', async () => {
    const { events, state } = await turn('default', '/stall please');
    expect(state).toBe('idle');
    const error = events.find((event) => event.type === 'error');
    expect(error).toMatchObject({ code: 'provider_timeout' });
    expect(events.some((event) => event.type === 'done')).toBe(false);
    // Two attempts (retry_attempts: 2), each of which streamed its two chunks first.
    expect(events.filter((event) => event.type === 'turn_started')).toHaveLength(2);
    expect(events.filter((event) => event.type === 'attempt_reset')).toHaveLength(1);
    expect(
      events
        .filter((event) => event.type === 'text_delta')
        .map((event) => event.delta)
        .join(''),
    ).toBe('You said: You said: ');
  });
});
