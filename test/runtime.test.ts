import { APICallError } from '@ai-sdk/provider';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkJournalInvariants } from './support/invariants.js';
import {
  journal,
  sessionRow,
  sleep,
  startTestWorker,
  waitForTerminal,
  type TestWorker,
} from './support/runtime-helpers.js';
import { request, startTestServer, type TestServer } from './support/server.js';
import { SseClient } from './support/sse.js';

/**
 * The runtime as a client sees it, over HTTP: burst folding, provider error handling,
 * usage accounting, typing. The API and a real worker run in this process on one
 * database; the worker's model is instrumented so tests can count provider calls.
 */

let server: TestServer;
let worker: TestWorker;
let counter = 0;
const turnId = () => `rt_${Date.now()}_${counter++}`;
// Demo pricing (USD per million tokens), so cost_usd is checkable.
const price = { input: 1000, output: 2000 };

beforeAll(async () => {
  server = await startTestServer(
    { pricing: { 'demo/echo': price } },
    { PARLEY_DEMO_DELAY_MS: '30' },
    { api: true, worker: false },
  );
  worker = await startTestWorker(server.db, server.config);
});
afterAll(async () => {
  await worker?.stop();
  if (server) {
    await checkJournalInvariants(server.db);
    await server.close();
  }
});

async function admit(body: Record<string, unknown>) {
  const answer = await request(server.url, 'POST', '/api/v1/chat/turns', body);
  expect(answer.status, JSON.stringify(answer.body)).toBe(202);
  return answer.body as { session_id: string; turn_id: string; sequence: number };
}

const words = (prefix: string, count: number) =>
  Array.from({ length: count }, (_unused, index) => `${prefix}${index + 1}`).join(' ');
/**
 * Event types in order; a run of text deltas is one `text_delta+`, and a run of several
 * usage events (failed calls billed with the reply) one `usage+`.
 */
const collapse = (events: { type: string }[]) => {
  const runs: { type: string; count: number }[] = [];
  for (const { type } of events) {
    const last = runs.at(-1);
    if (last?.type === type && (type === 'text_delta' || type === 'usage')) last.count += 1;
    else runs.push({ type, count: 1 });
  }
  return runs.map(({ type, count }) =>
    type === 'text_delta' || (type === 'usage' && count > 1) ? `${type}+` : type,
  );
};
const callsFor = (input: string) => worker.calls.filter((call) => call.input === input);

describe('burst folding', () => {
  it('folds messages that queued while the session was held into one labelled turn', async () => {
    const created = await request(server.url, 'POST', '/api/v1/chat/sessions', {});
    const sessionId: string = created.body.session_id;
    // Another worker holds the session (a live lease): input queues up behind it.
    await server.db.query(
      `update sessions set lease_token = 'blocker', lease_owner = 'blocker',
              lease_expires_at = now() + interval '1 hour'
        where session_id = $1`,
      [sessionId],
    );
    const ids = [turnId(), turnId(), turnId()];
    const messages = ['alpha bravo', 'charlie   delta', 'echo'];
    for (const [index, id] of ids.entries()) {
      await admit({ session_id: sessionId, turn_id: id, message: messages[index] });
    }
    await sleep(600);
    expect((await journal(server.db, sessionId)).map((event) => event.type)).toEqual([
      'message',
      'message',
      'message',
    ]);
    await server.db.query(
      `update sessions set lease_token = null, lease_owner = null, lease_expires_at = null
        where session_id = $1 and lease_token = 'blocker'`,
      [sessionId],
    );

    const done = await waitForTerminal(server.db, sessionId, ids[0] as string);
    expect(done).toMatchObject({ type: 'done', turn_id: ids[0], turn_ids: ids });
    expect(done.final_message.content).toBe(
      '[1] You said: alpha bravo\n[2] You said: charlie delta\n[3] You said: echo',
    );
    const events = await journal(server.db, sessionId);
    expect(collapse(events)).toEqual([
      'message',
      'message',
      'message',
      'turn_started',
      'text_delta+',
      'usage',
      'done',
    ]);
    expect(events.find((event) => event.type === 'turn_started')?.turn_ids).toEqual(ids);
    // One model call for the whole burst, with one labelled prompt.
    const burstCalls = worker.calls.filter((call) => call.input.includes('charlie   delta'));
    expect(burstCalls).toHaveLength(1);
    expect(burstCalls[0]?.input).toContain('<message n="3" author="local">');
  });

  it('folds input that arrives mid-reply; a user who keeps typing cannot stall the answer', async () => {
    // A long first reply (80 words at 30 ms each) keeps the worker busy.
    const firstMessage = words('long', 80);
    const ids = [turnId()];
    const { session_id: sessionId } = await admit({ turn_id: ids[0], message: firstMessage });
    const stream = await SseClient.open(server.url, sessionId);
    /** Waits until attempt number `count` of the session is streaming text. */
    const streaming = (count: number) =>
      stream.waitFor((client) => {
        const started = client.events.filter((event) => event.type === 'turn_started');
        const last = started[count - 1];
        return (
          started.length === count &&
          client.events.some(
            (event) => event.type === 'text_delta' && event.sequence > last.sequence,
          )
        );
      }, 40_000);

    // Three messages, each while the previous attempt streams: each pivots (aborts the
    // step and folds the new input in), up to the limit of three pivots in a row.
    const extra = ['bravo two', 'charlie three', 'delta four'];
    for (const [index, message] of extra.entries()) {
      await streaming(index + 1);
      const id = turnId();
      ids.push(id);
      await admit({ session_id: sessionId, turn_id: id, message });
    }
    // Past the limit, two more messages wait and are folded into ONE next turn.
    await streaming(4);
    const later = [turnId(), turnId()];
    await admit({ session_id: sessionId, turn_id: later[0], message: 'echo five' });
    await admit({ session_id: sessionId, turn_id: later[1], message: 'foxtrot six  seven' });
    await stream.waitFor(
      (client) => client.events.filter((event) => event.type === 'done').length === 2,
      60_000,
    );
    stream.close();

    const events = stream.events;
    const started = events.filter((event) => event.type === 'turn_started');
    expect(started.map((event) => event.turn_ids)).toEqual([
      ids.slice(0, 1),
      ids.slice(0, 2),
      ids.slice(0, 3),
      ids,
      later,
    ]);
    expect(started.map((event) => event.attempt)).toEqual([1, 2, 3, 4, 1]);
    // Every abandoned attempt's text is withdrawn right before the next attempt starts.
    const resets = events.flatMap((event, index) =>
      event.type === 'attempt_reset' ? [index] : [],
    );
    expect(resets).toHaveLength(3);
    for (const index of resets) expect(events[index + 1]?.type).toBe('turn_started');

    const dones = events.filter((event) => event.type === 'done');
    expect(dones[0]).toMatchObject({ turn_id: ids[0], turn_ids: ids });
    expect(dones[0].final_message.content).toBe(
      [firstMessage, ...extra].map((text, index) => `[${index + 1}] You said: ${text}`).join('\n'),
    );
    expect(dones[1]).toMatchObject({ turn_id: later[0], turn_ids: later });
    const folded: string = dones[1].final_message.content;
    expect(folded).toBe('[1] You said: echo five\n[2] You said: foxtrot six seven');
    // What a client assembles after the last restart of each burst is its final message.
    for (const [index, done] of dones.entries()) {
      const from = index === 0 ? started[3].sequence : started[4].sequence;
      const text = events
        .filter(
          (event) =>
            event.type === 'text_delta' && event.sequence > from && event.sequence < done.sequence,
        )
        .map((event) => event.delta)
        .join('');
      expect(text).toBe(done.final_message.content);
    }

    const transcript = await request(
      server.url,
      'GET',
      `/api/v1/chat/sessions/${sessionId}/messages`,
    );
    const roles = transcript.body.items.map((item: any) => `${item.role}:${item.turn_id}`);
    expect(roles.filter((role: string) => role.startsWith('assistant'))).toEqual([
      `assistant:${later[0]}`,
      `assistant:${ids[0]}`,
    ]);
    expect(roles.filter((role: string) => role.startsWith('user'))).toHaveLength(6);
  });
});

describe('provider errors', () => {
  function assertNoProviderText(events: any[]) {
    for (const event of events) {
      const text = JSON.stringify(event);
      for (const raw of ['simulated', 'rate limited', 'demo:', 'demo://', 'APICallError']) {
        expect(text, `${event.type} leaks provider text`).not.toContain(raw);
      }
    }
  }

  it('retries a transient failure and completes the turn', async () => {
    const message = `/fail transient 2 ${turnId()}`;
    const t = turnId();
    const { session_id: sessionId } = await admit({ turn_id: t, message });
    const terminal = await waitForTerminal(server.db, sessionId, t);
    expect(terminal).toMatchObject({
      type: 'done',
      turn_ids: [t],
      final_message: { content: `You said: ${message}` },
    });
    const calls = callsFor(message);
    expect(calls.map((call) => call.failed)).toEqual([true, true, false]);
    const events = await journal(server.db, sessionId);
    expect(collapse(events)).toEqual(['message', 'turn_started', 'text_delta+', 'usage+', 'done']);
    // The failed calls are billed too (issue 7), with the reply.
    expect(events.filter((event) => event.type === 'usage').map((event) => event.outcome)).toEqual([
      'failed',
      'failed',
      'ok',
    ]);
    assertNoProviderText(events);
  });

  it('gives up after 4 attempts with provider_unavailable', async () => {
    const message = `/fail transient 9 ${turnId()}`;
    const t = turnId();
    const { session_id: sessionId } = await admit({ turn_id: t, message });
    const terminal = await waitForTerminal(server.db, sessionId, t);
    expect(terminal).toMatchObject({
      type: 'error',
      turn_id: t,
      code: 'provider_unavailable',
      turn_ids: [t],
    });
    expect(typeof terminal.message).toBe('string');
    expect(Object.keys(terminal).sort()).toEqual(
      ['at', 'code', 'message', 'sequence', 'turn_id', 'turn_ids', 'type'].sort(),
    );
    expect(callsFor(message).map((call) => call.failed)).toEqual([true, true, true, true]);
    const events = await journal(server.db, sessionId);
    expect(events.map((event) => event.type)).toEqual([
      'message',
      'turn_started',
      ...Array(4).fill('usage'),
      'error',
    ]);
    expect(
      events.filter((event) => event.type === 'usage').every((e) => e.outcome === 'failed'),
    ).toBe(true);
    assertNoProviderText(events);
    const projection = await request(server.url, 'GET', `/api/v1/chat/sessions/${sessionId}`);
    expect(projection.body).toMatchObject({ state: 'idle', current_turn: null });
  });

  it('ends the turn on a permanent failure with provider_auth, without retrying', async () => {
    const message = `/fail permanent ${turnId()}`;
    const t = turnId();
    const { session_id: sessionId } = await admit({ turn_id: t, message });
    const terminal = await waitForTerminal(server.db, sessionId, t);
    expect(terminal).toMatchObject({
      type: 'error',
      turn_id: t,
      code: 'provider_auth',
      turn_ids: [t],
    });
    expect(callsFor(message)).toHaveLength(1);
    const events = await journal(server.db, sessionId);
    expect(events.map((event) => event.type)).toEqual([
      'message',
      'turn_started',
      'usage',
      'error',
    ]);
    assertNoProviderText(events);
    // The session is usable afterwards: the next message is answered.
    const next = turnId();
    await admit({ session_id: sessionId, turn_id: next, message: 'still there' });
    expect(await waitForTerminal(server.db, sessionId, next)).toMatchObject({
      type: 'done',
      final_message: { content: 'You said: still there' },
    });
  });
  const rawBody = 'upstream said: {"error":"overloaded","trace":"RAW-PROVIDER-BODY"}';
  const providerError = (isRetryable: boolean) => () =>
    new APICallError({
      message: rawBody,
      url: 'https://provider.invalid/v1/chat',
      requestBodyValues: {},
      statusCode: isRetryable ? 503 : 400,
      responseBody: rawBody,
      isRetryable,
    });

  it('a transient failure mid-reply withdraws the partial text, then retries', async () => {
    const message = words('mid', 30);
    worker.faults.push({
      matches: (input) => input === message,
      afterParts: 15,
      times: 1,
      error: providerError(true),
    });
    const t = turnId();
    const { session_id: sessionId } = await admit({ turn_id: t, message });
    const done = await waitForTerminal(server.db, sessionId, t);
    expect(done).toMatchObject({
      type: 'done',
      final_message: { content: `You said: ${message}` },
    });
    expect(callsFor(message)).toHaveLength(2);
    const events = await journal(server.db, sessionId);
    expect(collapse(events)).toEqual([
      'message',
      'turn_started',
      'text_delta+',
      'attempt_reset',
      'turn_started',
      'text_delta+',
      'usage+',
      'done',
    ]);
    const restarted = events.filter((event) => event.type === 'turn_started');
    expect(restarted.map((event) => event.attempt)).toEqual([1, 2]);
    const retried = events
      .filter(
        (event) => event.type === 'text_delta' && event.sequence > (restarted[1]?.sequence ?? 0),
      )
      .map((event) => event.delta)
      .join('');
    expect(retried).toBe(done.final_message.content);
    assertNoProviderText(events);
  });

  it('a permanent failure mid-reply ends the turn with provider_rejected and no raw text', async () => {
    const message = words('cut', 30);
    worker.faults.push({
      matches: (input) => input === message,
      afterParts: 15,
      times: 1,
      error: providerError(false),
    });
    const t = turnId();
    const { session_id: sessionId } = await admit({ turn_id: t, message });
    const terminal = await waitForTerminal(server.db, sessionId, t);
    expect(terminal).toMatchObject({ type: 'error', code: 'provider_rejected', turn_ids: [t] });
    expect(callsFor(message)).toHaveLength(1);
    const events = await journal(server.db, sessionId);
    expect(collapse(events)).toEqual(['message', 'turn_started', 'text_delta+', 'usage', 'error']);
    assertNoProviderText(events);
    for (const event of events) {
      expect(JSON.stringify(event)).not.toContain('RAW-PROVIDER-BODY');
      expect(JSON.stringify(event)).not.toContain('provider.invalid');
    }
    expect((await sessionRow(server.db, sessionId)).partial_output).toBe(false);
  });
});

describe('usage', () => {
  it('journals usage per call and totals it in the projection', async () => {
    // The default agent's instructions, "You are a helpful assistant.", are 5 words.
    const system = 5;
    const t1 = turnId();
    const { session_id: sessionId } = await admit({ turn_id: t1, message: 'alpha beta gamma' });
    await waitForTerminal(server.db, sessionId, t1);
    const t2 = turnId();
    await admit({ session_id: sessionId, turn_id: t2, message: 'delta echo' });
    await waitForTerminal(server.db, sessionId, t2);

    const usage = (await journal(server.db, sessionId)).filter((event) => event.type === 'usage');
    // Turn 1: system + "alpha beta gamma"; reply "You said: alpha beta gamma".
    const in1 = system + 3;
    const out1 = 5;
    // Turn 2: system + the history (3 + 5 words) + "delta echo"; reply "You said: delta echo".
    const in2 = system + 3 + 5 + 2;
    const out2 = 4;
    expect(usage).toHaveLength(2);
    expect(usage[0]).toMatchObject({
      turn_id: t1,
      model: 'demo/echo',
      input_tokens: in1,
      output_tokens: out1,
    });
    expect(usage[1]).toMatchObject({
      turn_id: t2,
      model: 'demo/echo',
      input_tokens: in2,
      output_tokens: out2,
    });
    const cost = (input: number, output: number) =>
      (input * price.input + output * price.output) / 1_000_000;
    expect(usage[0]?.cost_usd).toBeCloseTo(cost(in1, out1), 10);
    expect(usage[1]?.cost_usd).toBeCloseTo(cost(in2, out2), 10);
    for (const event of usage) {
      expect(typeof event.latency_ms).toBe('number');
      expect(event.latency_ms).toBeGreaterThanOrEqual(0);
    }

    const projection = await request(server.url, 'GET', `/api/v1/chat/sessions/${sessionId}`);
    expect(projection.body.usage).toMatchObject({
      input_tokens: in1 + in2,
      output_tokens: out1 + out2,
    });
    expect(projection.body.usage.cost_usd).toBeCloseTo(cost(in1 + in2, out1 + out2), 8);
  });
});

describe('typing', () => {
  it('sends a live-only typing frame (no id, never journaled) while the worker writes', async () => {
    const t = turnId();
    const { session_id: sessionId } = await admit({ turn_id: t, message: words('slow', 80) });
    const stream = await SseClient.open(server.url, sessionId);
    await stream.waitFor((client) => client.frames.some((frame) => frame.event === 'typing'));
    const typing = stream.frames.find((frame) => frame.event === 'typing');
    expect(typing?.id).toBeNull();
    expect(typing?.data).toMatchObject({ type: 'typing' });
    expect(typing?.data.sequence).toBeUndefined();
    await stream.waitForType('done');
    stream.close();
    // Every frame with an id is a durable event; typing never is.
    expect(stream.events.some((event) => (event.type as string) === 'typing')).toBe(false);
    const stored = await journal(server.db, sessionId);
    expect(stored.some((event) => (event.type as string) === 'typing')).toBe(false);
    expect(stream.events.map((event) => event.sequence)).toEqual(
      stored.map((event) => event.sequence),
    );
  });
});
