import { readEvents } from '../src/store/readEvents.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProcess, type Running } from '../src/cli/start.js';
import { createLogger } from '../src/log.js';
import { testConfig } from './support/config.js';
import { freshStorage } from './support/db.js';
import { checkJournalInvariants } from './support/invariants.js';
import { request } from './support/server.js';

let running: Running;
let url: string;
let drop: () => Promise<void>;
const alice = { authorization: 'Bearer alice-approver' };
const carol = { authorization: 'Bearer carol-member' };
let counter = 0;

beforeAll(async () => {
  const fresh = await freshStorage();
  drop = fresh.drop;
  const tools = { clock: 'allow', calculator: 'approve', ask_user: 'allow' };
  const config = testConfig(
    fresh.storage,
    {
      auth: {
        keys: [
          { key_env: 'K_ALICE', tenant: 'acme', user: 'alice', roles: ['lead'] },
          { key_env: 'K_CAROL', tenant: 'acme', user: 'carol', roles: [] },
        ],
      },
      agents: {
        default: { model: 'demo/echo', tools, approver_roles: ['lead'] },
        strict: { model: 'demo/echo', tools: { clock: 'deny', calculator: 'approve' } },
        patient: { model: 'demo/echo', tools, pending_input: 'queue' },
        frugal: {
          model: 'demo/echo',
          tools,
          budgets: { max_iterations: 1, max_tool_calls: 4, on_exhausted: 'ask' },
        },
      },
    },
    { K_ALICE: 'alice-approver', K_CAROL: 'carol-member' },
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

async function journal(sessionId: string): Promise<any[]> {
  return readEvents(running.db, sessionId, 0, 100_000);
}

async function until(sessionId: string, done: (events: any[]) => boolean): Promise<any[]> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const events = await journal(sessionId);
    if (done(events)) return events;
    if (Date.now() > deadline)
      throw new Error(`timed out: ${events.map((event) => event.type).join(' ')}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const count = (events: any[], type: string) => events.filter((event) => event.type === type).length;

async function admit(message: string, options: { sessionId?: string; agent?: string } = {}) {
  const turnId = `ap_${counter++}`;
  const response = await request(
    url,
    'POST',
    '/api/v1/chat/turns',
    {
      turn_id: turnId,
      message,
      ...(options.sessionId ? { session_id: options.sessionId } : {}),
      ...(options.agent ? { agent: options.agent } : {}),
    },
    alice,
  );
  expect(response.status).toBe(202);
  return { sessionId: response.body.session_id as string, turnId };
}

const answer = (sessionId: string, requestId: string, body: Record<string, unknown>, who = alice) =>
  request(url, 'POST', `/api/v1/chat/sessions/${sessionId}/inputs/${requestId}`, body, who);

describe('tools and approvals (§4)', () => {
  it('runs an allowed tool and the model quotes its result', async () => {
    const { sessionId } = await admit('/tool clock {}');
    const events = await until(sessionId, (list) => count(list, 'done') === 1);
    const result = events.find((event) => event.type === 'tool_result');
    expect(result).toMatchObject({ tool: 'clock', ok: true });
    expect(typeof result.result.now).toBe('string');
    expect(events.find((event) => event.type === 'done').final_message.content).toContain(
      'Tool clock returned:',
    );
  });

  it('stops for approval, checks the answer, and executes the recorded invocation once', async () => {
    const { sessionId, turnId } = await admit('/tool calculator {"expression": "2+3*4"}');
    let events = await until(sessionId, (list) => count(list, 'input_required') === 1);
    const required = events.find((event) => event.type === 'input_required');
    expect(required).toMatchObject({
      kind: 'approval',
      tool: 'calculator',
      arguments: { expression: '2+3*4' },
    });
    const projection = await request(
      url,
      'GET',
      `/api/v1/chat/sessions/${sessionId}`,
      undefined,
      alice,
    );
    expect(projection.body.state).toBe('input_required');
    expect(projection.body.pending_input).toMatchObject({
      request_id: required.request_id,
      kind: 'approval',
      expected_sequence: required.sequence,
    });
    expect(count(events, 'tool_result')).toBe(0);

    expect(
      (await answer(sessionId, 'req_unknown', { expected_sequence: 1, approved: true })).status,
    ).toBe(404);
    const forbidden = await answer(
      sessionId,
      required.request_id,
      {
        expected_sequence: required.sequence,
        approved: true,
      },
      carol,
    );
    expect(forbidden.status).toBe(403);
    const stale = await answer(sessionId, required.request_id, {
      expected_sequence: required.sequence - 1,
      approved: true,
    });
    expect(stale.status).toBe(409);
    expect(stale.body.error).toBe('stale_input');
    const ok = await answer(sessionId, required.request_id, {
      expected_sequence: required.sequence,
      approved: true,
    });
    expect(ok.status).toBe(200);
    expect(ok.body.state).toBe('accepted');
    const again = await answer(sessionId, required.request_id, {
      expected_sequence: required.sequence,
      approved: true,
    });
    expect(again.status).toBe(409);

    events = await until(sessionId, (list) => count(list, 'done') === 1);
    expect(events.find((event) => event.type === 'input_resolved')).toMatchObject({
      approved: true,
      actor: { user: 'alice', tenant: 'acme' },
    });
    const results = events.filter((event) => event.type === 'tool_result');
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({ tool: 'calculator', ok: true, result: { result: 14 } });
    const done = events.find((event) => event.type === 'done');
    expect(done.turn_ids).toEqual([turnId]);
    expect(done.final_message.content).toContain('"result":14');
  });

  it('records a rejection as the tool result and lets the model continue; nothing runs', async () => {
    const { sessionId } = await admit('/tool calculator {"expression": "1/1"}');
    const required = (await until(sessionId, (list) => count(list, 'input_required') === 1)).find(
      (event) => event.type === 'input_required',
    );
    await answer(sessionId, required.request_id, {
      expected_sequence: required.sequence,
      approved: false,
      response: { reason: 'too risky' },
    });
    const events = await until(sessionId, (list) => count(list, 'done') === 1);
    const result = events.find((event) => event.type === 'tool_result');
    expect(result).toMatchObject({
      ok: false,
      error: { code: 'rejected', message: 'rejected by alice: too risky' },
    });
    expect(events.find((event) => event.type === 'done').final_message.content).toContain(
      'rejected by alice',
    );
  });

  it('never runs a denied tool and tells the model so', async () => {
    const { sessionId } = await admit('/tool clock {}', { agent: 'strict' });
    const events = await until(sessionId, (list) => count(list, 'done') === 1);
    expect(events.find((event) => event.type === 'tool_result')).toMatchObject({
      ok: false,
      error: { code: 'denied' },
    });
    expect(count(events, 'input_required')).toBe(0);
  });

  it('tells the model that a tool no one has does not exist (not_found), and runs nothing', async () => {
    const { sessionId } = await admit('/tool no_such_tool {}\n/tool clock {}', {
      agent: 'strict',
    });
    const events = await until(sessionId, (list) => count(list, 'done') === 1);
    const results = events.filter((event) => event.type === 'tool_result');
    expect(results.map((result) => [result.tool, result.error?.code])).toEqual([
      ['no_such_tool', 'not_found'],
      ['clock', 'denied'],
    ]);
    expect(count(events, 'input_required')).toBe(0);
  });

  it('resolves parallel approvals independently and correctly', async () => {
    const { sessionId } = await admit(
      '/tool calculator {"expression": "1+1"}\n/tool calculator {"expression": "2+2"}',
    );
    let events = await until(sessionId, (list) => count(list, 'input_required') === 2);
    const [first, second] = events.filter((event) => event.type === 'input_required');
    expect(first.request_id).not.toBe(second.request_id);
    // answer the second first: the turn keeps waiting for the other one
    await answer(sessionId, second.request_id, {
      expected_sequence: second.sequence,
      approved: true,
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    events = await journal(sessionId);
    expect(count(events, 'tool_result')).toBe(0);
    const projection = await request(
      url,
      'GET',
      `/api/v1/chat/sessions/${sessionId}`,
      undefined,
      alice,
    );
    expect(projection.body.pending_input.request_id).toBe(first.request_id);
    await answer(sessionId, first.request_id, {
      expected_sequence: first.sequence,
      approved: false,
    });
    events = await until(sessionId, (list) => count(list, 'done') === 1);
    const results = events.filter((event) => event.type === 'tool_result');
    const byCall = Object.fromEntries(results.map((result) => [result.call_id, result]));
    expect(byCall[first.call_id]).toMatchObject({ ok: false, error: { code: 'rejected' } });
    expect(byCall[second.call_id]).toMatchObject({ ok: true, result: { result: 4 } });
  });

  it('supersedes a waiting approval with a new message (default), answering both in one reply', async () => {
    const first = await admit('/tool calculator {"expression": "9*9"}');
    const required = (
      await until(first.sessionId, (list) => count(list, 'input_required') === 1)
    ).find((event) => event.type === 'input_required');
    const second = await admit('never mind that', { sessionId: first.sessionId });
    const events = await until(first.sessionId, (list) => count(list, 'done') === 1);
    expect(events.find((event) => event.type === 'input_resolved')).toMatchObject({
      request_id: required.request_id,
      approved: false,
      expired: 'superseded',
    });
    expect(events.find((event) => event.type === 'tool_result')).toMatchObject({
      ok: false,
      error: { code: 'superseded' },
    });
    const done = events.find((event) => event.type === 'done');
    expect(done.turn_ids).toEqual([first.turnId, second.turnId]);
    expect(done.final_message.content).toContain('never mind that');
    const late = await answer(first.sessionId, required.request_id, {
      expected_sequence: required.sequence,
      approved: true,
    });
    expect(late.status).toBe(409);
  });

  it('queues a new message behind a waiting approval when the agent says so', async () => {
    const first = await admit('/tool calculator {"expression": "3-1"}', { agent: 'patient' });
    const required = (
      await until(first.sessionId, (list) => count(list, 'input_required') === 1)
    ).find((event) => event.type === 'input_required');
    const second = await admit('and then this', { sessionId: first.sessionId });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(count(await journal(first.sessionId), 'done')).toBe(0);
    await answer(first.sessionId, required.request_id, {
      expected_sequence: required.sequence,
      approved: true,
    });
    const events = await until(first.sessionId, (list) => count(list, 'done') === 2);
    const dones = events.filter((event) => event.type === 'done');
    expect(dones.map((event) => event.turn_ids)).toEqual([[first.turnId], [second.turnId]]);
  });

  it('asks the person a question with ask_user and gives the answer to the model', async () => {
    const { sessionId } = await admit('/tool ask_user {"question": "Which colour?"}');
    const required = (await until(sessionId, (list) => count(list, 'input_required') === 1)).find(
      (event) => event.type === 'input_required',
    );
    expect(required).toMatchObject({ kind: 'question', prompt: 'Which colour?' });
    await answer(sessionId, required.request_id, {
      expected_sequence: required.sequence,
      approved: true,
      response: { answer: 'blue' },
    });
    const events = await until(sessionId, (list) => count(list, 'done') === 1);
    expect(events.find((event) => event.type === 'tool_result')).toMatchObject({
      ok: true,
      result: { answer: 'blue' },
    });
  });

  it('asks for a budget extension when the turn runs out of steps', async () => {
    const { sessionId } = await admit('/tool clock {}', { agent: 'frugal' });
    const required = (await until(sessionId, (list) => count(list, 'input_required') === 1)).find(
      (event) => event.type === 'input_required',
    );
    expect(required).toMatchObject({ kind: 'budget_extension' });
    await answer(sessionId, required.request_id, {
      expected_sequence: required.sequence,
      approved: true,
    });
    const events = await until(sessionId, (list) => count(list, 'done') === 1);
    expect(events.find((event) => event.type === 'done').final_message.content).toContain(
      'Tool clock returned',
    );
  });

  it('cancels a turn that waits for a person, expiring its request', async () => {
    const { sessionId, turnId } = await admit('/tool calculator {"expression": "5"}');
    const required = (await until(sessionId, (list) => count(list, 'input_required') === 1)).find(
      (event) => event.type === 'input_required',
    );
    const cancelled = await request(
      url,
      'POST',
      `/api/v1/chat/sessions/${sessionId}/turns/${turnId}/cancel`,
      { command_id: `cmd_${turnId}` },
      alice,
    );
    expect(cancelled.body.result).toBe('cancelled');
    const events = await until(sessionId, (list) => count(list, 'cancelled') === 1);
    expect(events.find((event) => event.type === 'input_resolved')).toMatchObject({
      expired: 'cancelled',
    });
    expect(count(events, 'tool_result')).toBe(0);
    const late = await answer(sessionId, required.request_id, {
      expected_sequence: required.sequence,
      approved: true,
    });
    expect(late.status).toBe(409);
  });
});
