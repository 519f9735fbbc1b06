import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeApprovalId, encodeApprovalId } from '../src/ai-sdk/approvals.js';
import { argumentsDigest, canonicalJson } from '../src/runtime/argumentsDigest.js';
import { expireDueRequests } from '../src/store/expireDueRequests.js';
import { failTurn } from '../src/store/failTurn.js';
import { parkSession } from '../src/store/parkSession.js';
import { releaseLease } from '../src/store/releaseLease.js';
import { readEvents } from '../src/store/readEvents.js';
import { checkJournalInvariants } from './support/invariants.js';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// Approvals that end (docs/governance.md): a deadline resolves a pending approval with its
// safe default, once, and the turn resumes; an answer before it wins and the timer does
// nothing; an answer after it is stale. Each approval shows the digest of its exact
// arguments; an answer naming another is stale, and human_only tools require it.

let server: TestServer;
let counter = 0;

beforeAll(async () => {
  server = await startTestServer({
    agents: {
      default: { tools: { calculator: 'approve' } },
      // Approvals end quickly; clock's approve on timeout is the operator's choice.
      timed: {
        approval_timeout_ms: 300,
        tools: {
          calculator: 'approve',
          clock: { policy: 'approve', on_timeout: 'approve' },
        },
      },
      // An hour: the answer always comes first.
      slow: {
        approval_timeout_ms: 3_600_000,
        tools: { calculator: 'approve', clock: { policy: 'approve', approval_timeout_ms: 300 } },
      },
      guarded: { tools: { calculator: { policy: 'approve', human_only: true } } },
      // Questions and budget extensions with deadlines of an hour: the tests move them.
      asks: { question_timeout_ms: 3_600_000, tools: { ask_user: 'allow' } },
      frugal: {
        tools: { clock: 'allow' },
        budgets: {
          max_iterations: 1,
          max_tool_calls: 4,
          on_exhausted: 'ask',
          extension_timeout_ms: 3_600_000,
        },
      },
      // Its every model call is over its spending budget (below).
      stingy: { max_output_tokens: 100, budgets: { extension_timeout_ms: 3_600_000 } },
    },
    budgets: {
      stingy_run: {
        tenant: 'default',
        scope: 'agent',
        scope_id: 'stingy',
        metric: 'tokens',
        period: 'run',
        limit: 10,
      },
    },
    // A mission's keys apply to its executions' approvals, under a tool entry's.
    missions: {
      lenient: {
        agent: 'default',
        prompt: '/tool calculator {"expression": "6*7"}',
        approval_timeout_ms: 300,
        on_timeout: 'approve',
      },
      patient: { agent: 'slow', prompt: '/tool clock {}', approval_timeout_ms: 3_600_000 },
      hasty: {
        agent: 'slow',
        prompt: '/tool calculator {"expression": "1"}',
        approval_timeout_ms: 300,
      },
      later: { agent: 'timed', prompt: '/tool clock {}', approval_timeout_ms: 3_600_000 },
    },
  });
});
afterAll(async () => {
  await checkJournalInvariants(server.db);
  await server.close();
});

const journal = async (sessionId: string): Promise<any[]> =>
  readEvents(server.db, sessionId, 0, 100_000);
const ofType = (events: any[], type: string) => events.filter((event) => event.type === type);

async function admit(message: string, agent: string, sessionId?: string): Promise<string> {
  const response = await request(server.url, 'POST', '/api/v1/chat/turns', {
    turn_id: `deadline_${counter++}`,
    ...(sessionId ? { session_id: sessionId } : { agent }),
    message,
  });
  expect(response.status).toBe(202);
  return response.body.session_id as string;
}

async function untilEvents(sessionId: string, type: string, count = 1): Promise<any[]> {
  return until(
    () => journal(sessionId),
    (events) => ofType(events, type).length >= count,
    `${count} ${type} in ${sessionId}`,
  );
}

const answer = (sessionId: string, requestId: string, body: Record<string, unknown>) =>
  request(server.url, 'POST', `/api/v1/chat/sessions/${sessionId}/inputs/${requestId}`, body);

async function requestRow(requestId: string) {
  const found = await server.db.query<{
    state: string;
    approved: boolean | null;
    actor: any;
    resumed_at: Date | null;
  }>('select state, approved, actor, resumed_at from input_requests where request_id = $1', [
    requestId,
  ]);
  return found.rows[0];
}

describe('approval deadlines', () => {
  it('rejects a pending approval once when its deadline passes; the turn resumes with it', async () => {
    const sessionId = await admit('/tool calculator {"expression": "2+2"}', 'timed');
    const events = await untilEvents(sessionId, 'done');
    const [required] = ofType(events, 'input_required');
    expect(typeof required.deadline_at).toBe('string');
    const resolved = ofType(events, 'input_resolved');
    expect(resolved).toEqual([
      expect.objectContaining({
        request_id: required.request_id,
        approved: false,
        actor: { user: 'system:timeout', tenant: 'default' },
        state: 'timeout',
      }),
    ]);
    const [result] = ofType(events, 'tool_result');
    expect(result).toMatchObject({
      call_id: required.call_id,
      ok: false,
      error: { code: 'approval_timeout' },
    });
    expect(result.error.message).toContain('not approved in time');
    expect(result.error.message).toContain('nothing ran');
    expect(ofType(events, 'done')[0].final_message.content).toContain('not approved in time');
    expect(await requestRow(required.request_id)).toMatchObject({
      state: 'timeout',
      approved: false,
    });

    // A person's answer after the deadline is stale, and the timer has nothing left to do.
    const late = await answer(sessionId, required.request_id, {
      expected_sequence: required.sequence,
      approved: true,
    });
    expect(late.status).toBe(409);
    expect(late.body).toMatchObject({ error: 'stale_input' });
    expect(await expireDueRequests(server.db, { limit: 10 })).toBe(0);
    expect(ofType(await journal(sessionId), 'input_resolved')).toHaveLength(1);
  });

  it('approves on timeout where the operator configured on_timeout: approve', async () => {
    const sessionId = await admit('/tool clock {}', 'timed');
    const events = await untilEvents(sessionId, 'done');
    expect(ofType(events, 'input_resolved')).toEqual([
      expect.objectContaining({
        approved: true,
        actor: { user: 'system:timeout', tenant: 'default' },
        state: 'timeout',
      }),
    ]);
    expect(ofType(events, 'tool_result')).toEqual([
      expect.objectContaining({ tool: 'clock', ok: true }),
    ]);
  });

  it('lets an answer before the deadline win; the timer then does nothing', async () => {
    const sessionId = await admit('/tool calculator {"expression": "3*3"}', 'slow');
    const [required] = ofType(await untilEvents(sessionId, 'input_required'), 'input_required');
    // The projection and the inbox show the deadline and the digest the event shows.
    const projection = await request(server.url, 'GET', `/api/v1/chat/sessions/${sessionId}`);
    expect(projection.body.pending_input).toMatchObject({
      request_id: required.request_id,
      deadline_at: required.deadline_at,
      arguments_digest: required.arguments_digest,
    });
    const inbox = await request(server.url, 'GET', '/api/v1/inputs?state=pending');
    expect(
      inbox.body.items.find((item: any) => item.request_id === required.request_id),
    ).toMatchObject({
      state: 'pending',
      resumed_at: null,
      deadline_at: required.deadline_at,
      arguments_digest: required.arguments_digest,
    });

    const answered = await answer(sessionId, required.request_id, {
      expected_sequence: required.sequence,
      approved: true,
    });
    expect(answered.status).toBe(200);
    // Even once its deadline is in the past, an answered request is not the timer's.
    await server.db.query(
      `update input_requests set deadline_at = now() - interval '1 second' where request_id = $1`,
      [required.request_id],
    );
    expect(await expireDueRequests(server.db, { limit: 10 })).toBe(0);
    const events = await untilEvents(sessionId, 'done');
    expect(ofType(events, 'input_resolved')).toEqual([
      expect.objectContaining({
        approved: true,
        actor: { user: 'local', tenant: 'default' },
        state: 'answered',
      }),
    ]);
    expect(ofType(events, 'tool_result')).toEqual([
      expect.objectContaining({ ok: true, result: { expression: '3*3', result: 9 } }),
    ]);
    const row = await requestRow(required.request_id);
    expect(row).toMatchObject({ state: 'answered' });
    expect(row?.resumed_at).toBeInstanceOf(Date);
  });

  it('takes a tool entry’s approval_timeout_ms over the agent’s', async () => {
    const sessionId = await admit('/tool clock {}', 'slow');
    const events = await untilEvents(sessionId, 'done');
    expect(ofType(events, 'input_resolved')).toEqual([
      expect.objectContaining({ approved: false, state: 'timeout' }),
    ]);
  });

  it('leaves requests without a deadline pending', async () => {
    const sessionId = await admit('/tool calculator {"expression": "1"}', 'default');
    const [required] = ofType(await untilEvents(sessionId, 'input_required'), 'input_required');
    expect(required.deadline_at).toBeUndefined();
    expect(await expireDueRequests(server.db, { limit: 10 })).toBe(0);
    expect(await requestRow(required.request_id)).toMatchObject({ state: 'pending' });
    const answered = await answer(sessionId, required.request_id, {
      expected_sequence: required.sequence,
      approved: false,
    });
    expect(answered.status).toBe(200);
    await untilEvents(sessionId, 'done');
  });
});

/** Moves a pending request's deadline into the past and runs a round of the timer. */
async function passDeadline(requestId: string): Promise<void> {
  await server.db.query(
    `update input_requests set deadline_at = now() - interval '1 second' where request_id = $1`,
    [requestId],
  );
  // The worker's own timer may take it first: either way it is resolved once.
  await expireDueRequests(server.db, { limit: 10 });
}

async function inboxItem(requestId: string): Promise<any> {
  const inbox = await request(server.url, 'GET', '/api/v1/inputs?state=pending');
  return inbox.body.items.find((item: any) => item.request_id === requestId);
}

describe('deadlines of questions and budget extensions', () => {
  it('tells the model nobody answered a question in time; the turn ends normally', async () => {
    const sessionId = await admit('/tool ask_user {"question": "Which colour?"}', 'asks');
    const [required] = ofType(await untilEvents(sessionId, 'input_required'), 'input_required');
    expect(required).toMatchObject({ kind: 'question', prompt: 'Which colour?' });
    expect(typeof required.deadline_at).toBe('string');
    expect(await inboxItem(required.request_id)).toMatchObject({
      kind: 'question',
      deadline_at: required.deadline_at,
    });
    // A question neither escalates nor reminds.
    const planned = await server.db.query<{ nudges: unknown; next_nudge_at: Date | null }>(
      'select nudges, next_nudge_at from input_requests where request_id = $1',
      [required.request_id],
    );
    expect(planned.rows[0]).toMatchObject({ nudges: [], next_nudge_at: null });

    await passDeadline(required.request_id);
    const events = await untilEvents(sessionId, 'done');
    expect(ofType(events, 'input_resolved')).toEqual([
      expect.objectContaining({
        request_id: required.request_id,
        approved: false,
        actor: { user: 'system:timeout', tenant: 'default' },
        state: 'timeout',
      }),
    ]);
    const [result] = ofType(events, 'tool_result');
    expect(result).toMatchObject({
      call_id: required.call_id,
      tool: 'ask_user',
      ok: false,
      error: { code: 'question_timeout' },
    });
    expect(result.error.message).toContain('nobody answered in time');
    expect(ofType(events, 'error')).toHaveLength(0);
    expect(ofType(events, 'done')[0].final_message.content).toContain('nobody answered in time');
    expect(await requestRow(required.request_id)).toMatchObject({ state: 'timeout' });
    expect(await inboxItem(required.request_id)).toBeUndefined();

    const late = await answer(sessionId, required.request_id, {
      expected_sequence: required.sequence,
      approved: true,
      response: { answer: 'blue' },
    });
    expect(late.status).toBe(409);
    expect(late.body).toMatchObject({ error: 'stale_input' });
  });

  it("waits for a client's own tool as long as for a question; unanswered or refused, the call fails", async () => {
    const weather = { name: 'get_weather', parameters: { type: 'object' } };
    const admitted = await request(server.url, 'POST', '/api/v1/chat/turns', {
      turn_id: `deadline_${counter++}`,
      agent: 'asks',
      message: '/tool get_weather {"city": "Oslo"}',
      client_tools: [weather],
    });
    expect(admitted.status).toBe(202);
    const sessionId = admitted.body.session_id as string;
    const [required] = ofType(await untilEvents(sessionId, 'input_required'), 'input_required');
    expect(required).toMatchObject({
      kind: 'client_tool',
      tool: 'get_weather',
      arguments: { city: 'Oslo' },
    });
    expect(typeof required.deadline_at).toBe('string');
    await passDeadline(required.request_id);
    const events = await untilEvents(sessionId, 'done');
    expect(ofType(events, 'tool_result')[0]).toMatchObject({
      call_id: required.call_id,
      ok: false,
      error: { code: 'client_tool_timeout' },
    });

    // The next call is refused by the client: the model is told it did not run.
    const next = await request(server.url, 'POST', '/api/v1/chat/turns', {
      turn_id: `deadline_${counter++}`,
      session_id: sessionId,
      message: '/tool get_weather {"city": "Bern"}',
      client_tools: [weather],
    });
    expect(next.status).toBe(202);
    const asked = await until(
      () => journal(sessionId),
      (all) => ofType(all, 'input_required').length >= 2,
      'the second call',
    );
    const second = ofType(asked, 'input_required')[1];
    expect(second).toMatchObject({ kind: 'client_tool', arguments: { city: 'Bern' } });
    const refused = await answer(sessionId, second.request_id, {
      expected_sequence: second.sequence,
      approved: false,
      response: { reason: 'no network' },
    });
    expect(refused.status).toBe(200);
    const ended = await untilEvents(sessionId, 'done', 2);
    expect(ofType(ended, 'tool_result')[1]).toMatchObject({
      ok: false,
      error: { code: 'client_tool_failed' },
    });
    expect(ofType(ended, 'tool_result')[1].error.message).toContain('no network');
  });

  it('lets an answer to a question before its deadline win', async () => {
    const sessionId = await admit('/tool ask_user {"question": "Which size?"}', 'asks');
    const [required] = ofType(await untilEvents(sessionId, 'input_required'), 'input_required');
    const answered = await answer(sessionId, required.request_id, {
      expected_sequence: required.sequence,
      approved: true,
      response: { answer: 'large' },
    });
    expect(answered.status).toBe(200);
    await passDeadline(required.request_id);
    const events = await untilEvents(sessionId, 'done');
    expect(ofType(events, 'input_resolved')).toEqual([
      expect.objectContaining({ state: 'answered' }),
    ]);
    expect(ofType(events, 'tool_result')).toEqual([
      expect.objectContaining({ ok: true, result: { answer: 'large' } }),
    ]);
  });

  it('counts a budget extension nobody answered in time as refused', async () => {
    const sessionId = await admit('/tool clock {}', 'frugal');
    const [required] = ofType(await untilEvents(sessionId, 'input_required'), 'input_required');
    expect(required).toMatchObject({ kind: 'budget_extension' });
    expect(typeof required.deadline_at).toBe('string');
    expect(await inboxItem(required.request_id)).toMatchObject({
      kind: 'budget_extension',
      deadline_at: required.deadline_at,
    });

    await passDeadline(required.request_id);
    const events = await untilEvents(sessionId, 'done');
    expect(ofType(events, 'input_resolved')).toEqual([
      expect.objectContaining({
        request_id: required.request_id,
        approved: false,
        actor: { user: 'system:timeout', tenant: 'default' },
        state: 'timeout',
      }),
    ]);
    // As after a refusal: no second request, and the turn stops with the budget's reason.
    expect(ofType(events, 'input_required')).toHaveLength(1);
    expect(ofType(events, 'done')[0].final_message.content).toContain(
      'I stopped here: the turn used its 1 model steps',
    );
    expect(await requestRow(required.request_id)).toMatchObject({ state: 'timeout' });
  });

  it('ends the turn with budget_exhausted when a spending budget’s extension is not answered in time', async () => {
    const sessionId = await admit('stop me', 'stingy');
    const [required] = ofType(await untilEvents(sessionId, 'input_required'), 'input_required');
    expect(required).toMatchObject({ kind: 'budget_extension' });
    expect(typeof required.deadline_at).toBe('string');
    await passDeadline(required.request_id);
    const events = await untilEvents(sessionId, 'error');
    expect(ofType(events, 'error')[0]).toMatchObject({ code: 'budget_exhausted' });
    expect(ofType(events, 'input_resolved')).toEqual([
      expect.objectContaining({ approved: false, state: 'timeout' }),
    ]);
    expect(ofType(events, 'input_required')).toHaveLength(1);
    expect(ofType(events, 'done')).toHaveLength(0);
  });
});

/** Dispatches an execution of `mission` and returns its session. */
async function execute(mission: string): Promise<string> {
  const dispatched = await request(server.url, 'POST', `/api/v1/missions/${mission}/executions`, {
    execution_id: `deadline_x${counter++}`,
  });
  expect(dispatched.status).toBe(202);
  return dispatched.body.session_id as string;
}

describe('a mission’s own deadline', () => {
  it('applies its approval_timeout_ms and on_timeout to its executions’ approvals', async () => {
    const listed = await request(server.url, 'GET', '/api/v1/missions');
    expect(listed.body.items.find((item: any) => item.name === 'lenient')).toMatchObject({
      approval_timeout_ms: 300,
      on_timeout: 'approve',
    });
    // The agent has no deadline: the mission's ends the approval, and approves it.
    const sessionId = await execute('lenient');
    const events = await untilEvents(sessionId, 'done');
    const [required] = ofType(events, 'input_required');
    expect(required.turn_id).toMatch(/^exec\./);
    expect(typeof required.deadline_at).toBe('string');
    expect(ofType(events, 'input_resolved')).toEqual([
      expect.objectContaining({
        approved: true,
        actor: { user: 'system:timeout', tenant: 'default' },
        state: 'timeout',
      }),
    ]);
    expect(ofType(events, 'tool_result')).toEqual([
      expect.objectContaining({ ok: true, result: { expression: '6*7', result: 42 } }),
    ]);
  });

  it('takes the mission’s over the agent’s, and a tool entry’s over both', async () => {
    // slow: an hour for every approval; the mission's 300 ms wins.
    const hasty = await execute('hasty');
    const hastyEvents = await untilEvents(hasty, 'done');
    expect(ofType(hastyEvents, 'input_resolved')).toEqual([
      expect.objectContaining({ approved: false, state: 'timeout' }),
    ]);
    expect(ofType(hastyEvents, 'tool_result')[0]).toMatchObject({
      ok: false,
      error: { code: 'approval_timeout' },
    });
    // slow's clock entry says 300 ms: it wins over the mission's hour.
    const patient = await execute('patient');
    expect(ofType(await untilEvents(patient, 'done'), 'input_resolved')).toEqual([
      expect.objectContaining({ approved: false, state: 'timeout' }),
    ]);
  });

  it('never moves the deadline of a tool the operator approves on timeout', async () => {
    // timed: 300 ms, and clock approves on timeout; the mission's hour does not apply to it.
    const sessionId = await execute('later');
    const events = await untilEvents(sessionId, 'done');
    expect(ofType(events, 'input_resolved')).toEqual([
      expect.objectContaining({ approved: true, state: 'timeout' }),
    ]);
  });

  it('leaves the approvals of the same agent outside an execution to the agent', async () => {
    const sessionId = await admit('/tool calculator {"expression": "9"}', 'slow');
    const [required] = ofType(await untilEvents(sessionId, 'input_required'), 'input_required');
    // An hour after the request, not the hasty mission's 300 ms.
    const wait = await server.db.query<{ seconds: number }>(
      `select extract(epoch from deadline_at - created_at)::integer as seconds
         from input_requests where request_id = $1`,
      [required.request_id],
    );
    expect(Number(wait.rows[0]?.seconds)).toBe(3600);
    const answered = await answer(sessionId, required.request_id, {
      expected_sequence: required.sequence,
      approved: true,
    });
    expect(answered.status).toBe(200);
    await untilEvents(sessionId, 'done');
  });
});

describe('the digest of the exact arguments', () => {
  it('is the sha-256 of the canonical JSON, whatever the key order', () => {
    expect(canonicalJson({ b: [1, { d: 1, c: 'x' }], a: null })).toBe(
      '{"a":null,"b":[1,{"c":"x","d":1}]}',
    );
    expect(argumentsDigest({ b: 1, a: 2 })).toBe(argumentsDigest({ a: 2, b: 1 }));
    expect(argumentsDigest({ a: 1 })).toMatch(/^[0-9a-f]{64}$/);
    expect(argumentsDigest({ a: 1 })).not.toBe(argumentsDigest({ a: 2 }));
  });

  it('travels in an AI SDK approval id, so the transport can name it in the answer', () => {
    const ref = {
      requestId: 'req_01',
      expectedSequence: 12,
      kind: 'approval' as const,
      turnId: 'turn_1',
      argumentsDigest: argumentsDigest({ expression: '1+1' }),
    };
    expect(decodeApprovalId(encodeApprovalId(ref))).toEqual(ref);
    const { argumentsDigest: _digest, ...withoutDigest } = ref;
    expect(decodeApprovalId(encodeApprovalId(withoutDigest))).toEqual(withoutDigest);
    expect(decodeApprovalId('req_01~12~a~turn_1~not-a-digest')).toBeNull();
  });

  it('gives parallel approvals their own digests; a mismatch is 409 and writes nothing', async () => {
    const sessionId = await admit(
      '/tool calculator {"expression": "1+1"}\n/tool calculator {"expression": "2+2"}',
      'default',
    );
    const [first, second] = ofType(
      await untilEvents(sessionId, 'input_required', 2),
      'input_required',
    );
    expect(first.arguments_digest).toBe(argumentsDigest({ expression: '1+1' }));
    expect(second.arguments_digest).toBe(argumentsDigest({ expression: '2+2' }));

    const swapped = await answer(sessionId, first.request_id, {
      expected_sequence: first.sequence,
      approved: true,
      arguments_digest: second.arguments_digest,
    });
    expect(swapped.status).toBe(409);
    expect(swapped.body).toMatchObject({ error: 'stale_input' });
    expect(swapped.body.message).toContain('arguments_digest');
    const malformed = await answer(sessionId, first.request_id, {
      expected_sequence: first.sequence,
      approved: true,
      arguments_digest: 'not-a-digest',
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body).toMatchObject({ error: 'invalid_request' });
    expect(ofType(await journal(sessionId), 'input_resolved')).toHaveLength(0);
    expect(await requestRow(first.request_id)).toMatchObject({ state: 'pending' });

    for (const required of [second, first]) {
      const ok = await answer(sessionId, required.request_id, {
        expected_sequence: required.sequence,
        approved: true,
        arguments_digest: required.arguments_digest,
      });
      expect(ok.status).toBe(200);
    }
    const events = await untilEvents(sessionId, 'done');
    const results = Object.fromEntries(
      ofType(events, 'tool_result').map((result) => [result.call_id, result]),
    );
    expect(results[first.call_id]).toMatchObject({ ok: true, result: { result: 2 } });
    expect(results[second.call_id]).toMatchObject({ ok: true, result: { result: 4 } });
  });

  it('is required to answer an approval of a human_only tool (400 without, nothing written)', async () => {
    const sessionId = await admit('/tool calculator {"expression": "7*6"}', 'guarded');
    const [required] = ofType(await untilEvents(sessionId, 'input_required'), 'input_required');
    const missing = await answer(sessionId, required.request_id, {
      expected_sequence: required.sequence,
      approved: true,
    });
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ error: 'invalid_request' });
    expect(missing.body.message).toContain('arguments_digest');
    expect(ofType(await journal(sessionId), 'input_resolved')).toHaveLength(0);
    expect(await requestRow(required.request_id)).toMatchObject({ state: 'pending' });
    const ok = await answer(sessionId, required.request_id, {
      expected_sequence: required.sequence,
      approved: true,
      arguments_digest: required.arguments_digest,
    });
    expect(ok.status).toBe(200);
    const events = await untilEvents(sessionId, 'done');
    expect(ofType(events, 'tool_result')).toEqual([
      expect.objectContaining({ ok: true, result: { expression: '7*6', result: 42 } }),
    ]);
  });
});

describe('request states', () => {
  it('marks a cancelled turn’s requests cancelled; the event keeps expired: cancelled', async () => {
    const turnId = `deadline_${counter++}`;
    const admitted = await request(server.url, 'POST', '/api/v1/chat/turns', {
      turn_id: turnId,
      message: '/tool calculator {"expression": "5"}',
    });
    const sessionId = admitted.body.session_id as string;
    const [required] = ofType(await untilEvents(sessionId, 'input_required'), 'input_required');
    const cancelled = await request(
      server.url,
      'POST',
      `/api/v1/chat/sessions/${sessionId}/turns/${turnId}/cancel`,
      { command_id: `cmd_${turnId}` },
    );
    expect(cancelled.body.result).toBe('cancelled');
    const events = await untilEvents(sessionId, 'cancelled');
    expect(ofType(events, 'input_resolved')).toEqual([
      expect.objectContaining({
        request_id: required.request_id,
        approved: false,
        actor: null,
        expired: 'cancelled',
        state: 'cancelled',
      }),
    ]);
    const row = await requestRow(required.request_id);
    expect(row).toMatchObject({ state: 'cancelled' });
    expect(row?.resumed_at).toBeNull();
  });

  /** The lease a worker would hold on the session, taken while its turn waits. */
  async function takeLease(sessionId: string) {
    const token = `test_${counter++}`;
    await server.db.query(
      `update sessions set lease_token = $2, lease_owner = 'test',
              lease_expires_at = now() + interval '1 minute'
        where session_id = $1`,
      [sessionId, token],
    );
    return { sessionId, tenant: 'default', token };
  }

  async function expectClosedAsError(sessionId: string, required: any, errorCode: string) {
    const events = await journal(sessionId);
    expect(ofType(events, 'input_resolved')).toEqual([
      expect.objectContaining({
        request_id: required.request_id,
        approved: false,
        actor: null,
        expired: 'error',
        state: 'error',
      }),
    ]);
    const [error] = ofType(events, 'error');
    expect(error).toMatchObject({ code: errorCode });
    // Closed with the error, and journaled before it.
    expect(ofType(events, 'input_resolved')[0].sequence).toBe(error.sequence - 1);
    expect(await requestRow(required.request_id)).toMatchObject({ state: 'error' });
    expect(await inboxItem(required.request_id)).toBeUndefined();
    const late = await answer(sessionId, required.request_id, {
      expected_sequence: required.sequence,
      approved: true,
    });
    expect(late.status).toBe(409);
    expect(late.body).toMatchObject({ error: 'stale_input' });
  }

  it('closes the pending requests of a turn that fails for good as error', async () => {
    const sessionId = await admit('/tool calculator {"expression": "5+5"}', 'default');
    const [required] = ofType(await untilEvents(sessionId, 'input_required'), 'input_required');
    const lease = await takeLease(sessionId);
    const turn = await server.db.query<{ position: number }>(
      'select position from turns where turn_id = $1',
      [required.turn_id],
    );
    await failTurn(server.db, lease, {
      turnIds: [required.turn_id],
      lastPosition: turn.rows[0]?.position as number,
      code: 'provider_error',
      message: 'failed for the test',
      usage: [],
    });
    expect(await releaseLease(server.db, lease)).toBe(true);
    await expectClosedAsError(sessionId, required, 'provider_error');
  });

  it('closes the pending requests of a parked session as error', async () => {
    const sessionId = await admit('/tool calculator {"expression": "6+6"}', 'default');
    const [required] = ofType(await untilEvents(sessionId, 'input_required'), 'input_required');
    const lease = await takeLease(sessionId);
    const parked = await parkSession(server.db, lease, { claims: 5, queued: 'fail' });
    expect(parked?.turnIds).toEqual([required.turn_id]);
    await expectClosedAsError(sessionId, required, 'session_parked');
  });

  it('keeps a superseded request expired', async () => {
    const sessionId = await admit('/tool calculator {"expression": "8"}', 'default');
    const [required] = ofType(await untilEvents(sessionId, 'input_required'), 'input_required');
    await admit('never mind', 'default', sessionId);
    const events = await untilEvents(sessionId, 'done');
    expect(ofType(events, 'input_resolved')).toEqual([
      expect.objectContaining({ expired: 'superseded', state: 'expired' }),
    ]);
    expect(await requestRow(required.request_id)).toMatchObject({ state: 'expired' });
  });
});
