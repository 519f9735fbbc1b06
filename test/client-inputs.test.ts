import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ParleyClient,
  ParleyClientError,
  type ParleyEvent,
  type SessionProjection,
  type StateChange,
  type Subscription,
} from '../src/client/index.js';
import { checkJournalInvariants } from './support/invariants.js';
import { startTestServer, type TestServer } from './support/server.js';
import { until } from './support/poll.js';

/**
 * The SDK's §4 and §5 calls (answerInput, cancelTurn) against a real server in single-user
 * dev mode (principal `local` of tenant `default`): a subscription that stops at
 * `input_required`, the answer, resume, and the turn's end; stale and repeated answers;
 * cancelling a streaming turn, a retried cancel, and a cancel that comes too late.
 */

const quickBackoff = { initialMs: 20, maxMs: 200 };
const calculate = '/tool calculator {"expression": "6*7"}';
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer(
    {
      agents: {
        default: {
          model: 'demo/echo',
          tools: { calculator: 'approve', clock: 'allow', ask_user: 'allow' },
        },
      },
    },
    // Slow enough that a long reply is still streaming when the cancel arrives.
    { PARLEY_DEMO_DELAY_MS: '40' },
  );
});
afterAll(async () => {
  if (server) {
    await checkJournalInvariants(server.db);
    await server.close();
  }
});

function newClient(options: { fetch?: typeof fetch } = {}): ParleyClient {
  return new ParleyClient({ baseUrl: server.url, fetch: options.fetch, backoff: quickBackoff });
}

/** A default (stopOnTerminal) subscription that records its events and state changes. */
function record(client: ParleyClient, sessionId: string) {
  const seen = {
    events: [] as ParleyEvent[],
    states: [] as StateChange[],
    subscription: undefined as unknown as Subscription,
    types(): string[] {
      return seen.events.map((event) => event.type);
    },
    waitFor(condition: () => boolean, what: string) {
      return until(() => condition(), Boolean, what);
    },
  };
  seen.subscription = client.subscribe(sessionId, {
    backoff: quickBackoff,
    onEvent: (event) => {
      seen.events.push(event);
    },
    onState: (change) => seen.states.push(change),
  });
  return seen;
}

function range(from: number, to: number): number[] {
  return Array.from({ length: Math.max(0, to - from + 1) }, (_, index) => from + index);
}

function sequences(events: ParleyEvent[]): number[] {
  return events.map((event) => event.sequence);
}

function ofType<T extends ParleyEvent['type']>(
  events: ParleyEvent[],
  type: T,
): Extract<ParleyEvent, { type: T }>[] {
  return events.filter((event): event is Extract<ParleyEvent, { type: T }> => event.type === type);
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

/** The error a promise rejects with (fails the test when it resolves). */
async function failure(promise: Promise<unknown>): Promise<ParleyClientError> {
  const outcome = await promise.then(
    (value) => ({ resolved: value }),
    (error: unknown) => ({ error }),
  );
  if (!('error' in outcome)) {
    throw new Error(`expected a rejection, got ${JSON.stringify(outcome.resolved)}`);
  }
  expect(outcome.error).toBeInstanceOf(ParleyClientError);
  return outcome.error as ParleyClientError;
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

/**
 * Admits `message` and subscribes (stopOnTerminal, the default); returns once the
 * `input_required` event has been delivered, with the recorder.
 */
async function untilInputRequired(client: ParleyClient, message: string) {
  const admission = await client.admitTurn({ message });
  const seen = record(client, admission.session_id);
  await seen.waitFor(
    () => seen.types().includes('input_required') || seen.subscription.state === 'closed',
    'the input request',
  );
  const required = ofType(seen.events, 'input_required')[0];
  if (!required) throw new Error(`no input request; the events: ${seen.types().join(' ')}`);
  expect(seen.types()).not.toContain('done');
  expect(seen.types()).not.toContain('tool_result');
  return { admission, seen, required };
}

/**
 * After answering: follows the subscription until the turn has ended (done, cancelled or
 * error), resuming it whenever it settled before that (for example at the input request).
 */
async function untilTurnEnds(seen: ReturnType<typeof record>): Promise<void> {
  const ended = () =>
    seen.events.some((event) => ['done', 'cancelled', 'error'].includes(event.type));
  for (;;) {
    if (seen.subscription.state === 'closed') seen.subscription.resume();
    const stop = await seen.subscription.whenStopped();
    expect(stop.reason).toBe('settled');
    if (ended()) return;
  }
}

/**
 * Waits (generously) for a subscription to stop; fails with what the projection said
 * instead of hanging when it does not.
 */
async function stopsWithin(
  client: ParleyClient,
  sessionId: string,
  subscription: Subscription,
  ms = 15_000,
): Promise<StateChange> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), ms)));
  const stop = await Promise.race([subscription.whenStopped(), timeout]);
  clearTimeout(timer);
  if (stop) return stop;
  const projection = await client.getSession(sessionId);
  subscription.close();
  throw new Error(
    `the subscription did not stop at input_required within ${ms} ms (state ${subscription.state}, ` +
      `cursor ${subscription.cursor}); the projection: state ${projection.state}, latest_sequence ` +
      `${projection.latest_sequence}, queued_turns ${String(projection.queued_turns)}`,
  );
}

describe('ParleyClient.answerInput (§4)', () => {
  it('stops the subscription at input_required; an approval resumes the turn, which quotes 42', async () => {
    const client = newClient();
    const { admission, seen, required } = await untilInputRequired(client, calculate);
    const sessionId = admission.session_id;

    // §7.8: the subscription stops by itself at the request, and reads nothing after it.
    const settled = await stopsWithin(client, sessionId, seen.subscription);
    expect(settled).toMatchObject({ state: 'closed', reason: 'settled', after: required.sequence });
    expect(seen.events.at(-1)).toBe(required);
    expect(seen.subscription.cursor).toBe(required.sequence);
    expect(required).toMatchObject({
      type: 'input_required',
      kind: 'approval',
      tool: 'calculator',
      arguments: { expression: '6*7' },
      turn_id: admission.turn_id,
    });
    expect(typeof required.request_id).toBe('string');
    const proposed = ofType(seen.events, 'tool_call');
    expect(proposed).toHaveLength(1);
    expect(proposed[0]).toMatchObject({ tool: 'calculator', call_id: required.call_id });

    // The projection agrees: the session waits for exactly this request.
    const waiting = await client.getSession(sessionId);
    expect(waiting).toMatchObject({
      state: 'input_required',
      latest_sequence: required.sequence,
      pending_input: {
        request_id: required.request_id,
        kind: 'approval',
        expected_sequence: required.sequence,
      },
    });

    // Nothing happens by itself while it waits: the subscription stays stopped.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(seen.subscription.state).toBe('closed');
    expect((await client.getSession(sessionId)).latest_sequence).toBe(required.sequence);

    const answer = await client.answerInput(sessionId, required.request_id, {
      expectedSequence: required.sequence,
      approved: true,
    });
    expect(answer.state).toBe('accepted');
    expect(answer.sequence).toBeGreaterThan(required.sequence);

    seen.subscription.resume();
    const stop = await seen.subscription.whenStopped();
    expect(stop.reason).toBe('settled');

    const after = seen.events.filter((event) => event.sequence > required.sequence);
    const resolved = ofType(after, 'input_resolved');
    expect(resolved).toHaveLength(1);
    expect(resolved[0]).toMatchObject({
      sequence: answer.sequence,
      request_id: required.request_id,
      approved: true,
      actor: { user: 'local', tenant: 'default' },
    });
    const results = ofType(after, 'tool_result');
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({
      call_id: required.call_id,
      tool: 'calculator',
      ok: true,
      result: { result: 42 },
    });
    const dones = ofType(seen.events, 'done');
    expect(dones).toHaveLength(1);
    expect(seen.events.at(-1)).toBe(dones[0]);
    expect(dones[0]?.turn_ids).toEqual([admission.turn_id]);
    expect(dones[0]?.final_message.content).toBe(
      'Tool calculator returned: {"expression":"6*7","result":42}',
    );
    expect(replyText(seen.events)).toBe(dones[0]?.final_message.content);

    // Every sequence exactly once, across the stop at the request and the resume.
    const projection = await waitIdle(client, sessionId);
    expect(projection.pending_input).toBeNull();
    expect(sequences(seen.events)).toEqual(range(1, projection.latest_sequence));
    expect(seen.subscription.cursor).toBe(projection.latest_sequence);
    expect(seen.states.map((change) => change.state)).toEqual([
      'connecting',
      'open',
      'closed',
      'connecting',
      'open',
      'closed',
    ]);
  });

  it('rejects a stale expected_sequence and a second answer with 409 stale_input; one answer counts', async () => {
    const client = newClient();
    const { admission, seen, required } = await untilInputRequired(client, calculate);
    const sessionId = admission.session_id;

    for (const wrong of [required.sequence - 1, required.sequence + 1, 0]) {
      const stale = await failure(
        client.answerInput(sessionId, required.request_id, {
          expectedSequence: wrong,
          approved: true,
        }),
      );
      expect(stale, `expected_sequence ${wrong}`).toMatchObject({
        code: 'stale_input',
        status: 409,
      });
      expect(stale.body).toMatchObject({ error: 'stale_input' });
      expect(stale.retryable).toBe(false);
    }
    // A stale answer changes nothing: the request is still pending, nothing was journaled.
    const still = await client.getSession(sessionId);
    expect(still).toMatchObject({
      state: 'input_required',
      latest_sequence: required.sequence,
      pending_input: { request_id: required.request_id, expected_sequence: required.sequence },
    });

    const unknown = await failure(
      client.answerInput(sessionId, 'req_no_such_request', {
        expectedSequence: required.sequence,
        approved: true,
      }),
    );
    expect(unknown).toMatchObject({ code: 'input_not_found', status: 404 });

    const first = await client.answerInput(sessionId, required.request_id, {
      expectedSequence: required.sequence,
      approved: true,
    });
    expect(first.state).toBe('accepted');

    // The same answer again, and a contrary one: both 409, single use.
    for (const approved of [true, false]) {
      const again = await failure(
        client.answerInput(sessionId, required.request_id, {
          expectedSequence: required.sequence,
          approved,
          response: { reason: 'changed my mind' },
        }),
      );
      expect(again, `second answer approved=${approved}`).toMatchObject({
        code: 'stale_input',
        status: 409,
      });
    }

    await untilTurnEnds(seen);
    const resolved = ofType(seen.events, 'input_resolved');
    expect(resolved).toHaveLength(1);
    expect(resolved[0]).toMatchObject({ sequence: first.sequence, approved: true });
    const results = ofType(seen.events, 'tool_result');
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({ ok: true, result: { result: 42 } });
    const done = ofType(seen.events, 'done');
    expect(done).toHaveLength(1);
    expect(done[0]?.final_message.content).toContain('"result":42');
    const projection = await waitIdle(client, sessionId);
    expect(sequences(seen.events)).toEqual(range(1, projection.latest_sequence));
  });

  it('records a rejection with its reason as the tool result: "rejected by local: <reason>"', async () => {
    const client = newClient();
    const { admission, seen, required } = await untilInputRequired(client, calculate);
    const answer = await client.answerInput(admission.session_id, required.request_id, {
      expectedSequence: required.sequence,
      approved: false,
      response: { reason: 'too risky' },
    });
    expect(answer.state).toBe('accepted');

    await untilTurnEnds(seen);
    expect(ofType(seen.events, 'input_resolved')).toEqual([
      expect.objectContaining({
        sequence: answer.sequence,
        request_id: required.request_id,
        approved: false,
        actor: { user: 'local', tenant: 'default' },
      }),
    ]);
    const results = ofType(seen.events, 'tool_result');
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({
      call_id: required.call_id,
      tool: 'calculator',
      ok: false,
      error: { code: 'rejected', message: 'rejected by local: too risky' },
    });
    expect(results[0]?.result).toBeUndefined();
    const done = ofType(seen.events, 'done');
    expect(done).toHaveLength(1);
    expect(done[0]?.turn_ids).toEqual([admission.turn_id]);
    // The model was told that nothing ran, and why; it never saw a result.
    expect(done[0]?.final_message.content).toContain('rejected by local: too risky');
    expect(done[0]?.final_message.content).not.toContain('42');
  });

  it('answers an ask_user question with a response, which the model receives', async () => {
    const client = newClient();
    const { admission, seen, required } = await untilInputRequired(
      client,
      '/tool ask_user {"question": "Which colour?"}',
    );
    expect(required).toMatchObject({ kind: 'question', prompt: 'Which colour?' });
    const pending = (await client.getSession(admission.session_id)).pending_input;
    expect(pending).toMatchObject({
      request_id: required.request_id,
      kind: 'question',
      expected_sequence: required.sequence,
    });

    const answer = await client.answerInput(admission.session_id, required.request_id, {
      expectedSequence: required.sequence,
      approved: true,
      response: { answer: 'blue' },
    });
    expect(answer.state).toBe('accepted');
    await untilTurnEnds(seen);

    const results = ofType(seen.events, 'tool_result');
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({ tool: 'ask_user', ok: true, result: { answer: 'blue' } });
    const done = ofType(seen.events, 'done');
    expect(done).toHaveLength(1);
    expect(done[0]?.final_message.content).toContain('blue');
    expect(
      await failure(
        client.answerInput(admission.session_id, required.request_id, {
          expectedSequence: required.sequence,
          approved: true,
          response: { answer: 'red' },
        }),
      ),
    ).toMatchObject({ code: 'stale_input', status: 409 });
  });
});

describe('ParleyClient.cancelTurn (§5)', () => {
  const words = Array.from({ length: 60 }, (_, index) => `word${index}`).join(' ');

  it('cancels a streaming reply: cancelled, then a cancelled event; the same command_id again is a duplicate', async () => {
    const client = newClient();
    const admission = await client.admitTurn({ message: words });
    const sessionId = admission.session_id;
    const seen = record(client, sessionId);
    await seen.waitFor(
      () => ofType(seen.events, 'text_delta').length >= 2,
      'the first words of the reply',
    );

    const commandId = 'cancel_sdk_streaming';
    const first = await client.cancelTurn(sessionId, admission.turn_id, { commandId });
    expect(first.result).toBe('cancelled');
    expect(typeof first.state).toBe('string');
    expect(typeof first.sequence).toBe('number');

    // The subscription settles on the cancelled event, with no done.
    const stop = await seen.subscription.whenStopped();
    expect(stop.reason).toBe('settled');
    const cancelled = ofType(seen.events, 'cancelled');
    expect(cancelled).toHaveLength(1);
    expect(cancelled[0]).toMatchObject({ command_id: commandId, turn_ids: [admission.turn_id] });
    expect(seen.events.at(-1)).toBe(cancelled[0]);
    expect(seen.types()).not.toContain('done');
    // The provider stream was aborted: the reply never got to its end.
    expect(replyText(seen.events)).not.toContain('word59');

    const retried = await client.cancelTurn(sessionId, admission.turn_id, { commandId });
    expect(retried.result).toBe('duplicate');
    expect(retried.state).toBe(first.state);

    // A new command after the turn ended is too late, and says how it ended.
    const later = await client.cancelTurn(sessionId, admission.turn_id, {
      commandId: 'cancel_sdk_later',
    });
    expect(later).toMatchObject({ result: 'too_late', state: 'cancelled' });

    const projection = await waitIdle(client, sessionId);
    expect(sequences(seen.events)).toEqual(range(1, projection.latest_sequence));
    expect(later.sequence).toBe(projection.latest_sequence);
  });

  it('keeps its own command_id across a retry after a lost answer: the retry reads duplicate', async () => {
    const cancelBodies: string[] = [];
    let lost = false;
    const client = newClient({
      fetch: async (input, init) => {
        const target =
          typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
        const isCancel = target.endsWith('/cancel');
        if (isCancel && typeof init?.body === 'string') cancelBodies.push(init.body);
        const response = await fetch(input, init);
        if (isCancel && !lost) {
          // The server cancelled the turn, but its answer never reaches the client.
          lost = true;
          await response.text();
          throw new TypeError('fetch failed: connection reset');
        }
        return response;
      },
    });
    const admission = await client.admitTurn({ message: words });
    const seen = record(client, admission.session_id);
    await seen.waitFor(
      () => ofType(seen.events, 'text_delta').length >= 2,
      'the first words of the reply',
    );
    const outcome = await client.cancelTurn(admission.session_id, admission.turn_id);
    expect(outcome.result).toBe('duplicate');
    expect(cancelBodies).toHaveLength(2);
    expect(cancelBodies[1]).toBe(cancelBodies[0]);
    const commandId = (JSON.parse(cancelBodies[0] as string) as { command_id: string }).command_id;
    expect(commandId).toMatch(/^cancel_[A-Za-z0-9_-]+$/);

    expect((await seen.subscription.whenStopped()).reason).toBe('settled');
    const cancelled = ofType(seen.events, 'cancelled');
    expect(cancelled).toHaveLength(1);
    expect(cancelled[0]).toMatchObject({ command_id: commandId, turn_ids: [admission.turn_id] });
    expect(seen.types()).not.toContain('done');
  });

  it('answers too_late for a turn that is done', async () => {
    const client = newClient();
    const admission = await client.admitTurn({ message: 'short and done' });
    const seen = record(client, admission.session_id);
    expect((await seen.subscription.whenStopped()).reason).toBe('settled');
    const done = ofType(seen.events, 'done');
    expect(done).toHaveLength(1);
    expect(done[0]?.final_message.content).toBe('You said: short and done');

    const late = await client.cancelTurn(admission.session_id, admission.turn_id);
    expect(late).toMatchObject({ result: 'too_late', state: 'done' });
    expect(late.sequence).toBe(done[0]?.sequence);
    const projection = await client.getSession(admission.session_id);
    expect(projection.latest_sequence).toBe(done[0]?.sequence);
    expect(projection.state).toBe('idle');

    const unknown = await failure(client.cancelTurn(admission.session_id, 'turn_nobody_admitted'));
    expect(unknown).toMatchObject({ code: 'turn_not_found', status: 404 });
  });
});
