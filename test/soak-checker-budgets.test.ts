import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  budgetMessage,
  soakBudgets,
  stepBudgets,
  stepsAgent,
  stepsMessage,
  stepsStopText,
  stoppedPrefix,
} from '../scripts/soak/budgets.js';
import { checkDatabase, type Category } from '../scripts/soak/checker/index.js';
import { Ledger } from '../scripts/soak/ledger.js';
import { followThread } from '../scripts/soak/aguiThread.js';
import { Apis } from '../scripts/soak/http.js';
import { answerTo, messageFor } from '../scripts/soak/messages.js';
import { Random } from '../scripts/soak/random.js';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';
import { journalOf } from './support/journal.js';

// The soak's budget rule (scripts/soak/checker/budgets.ts) on a real journal: with the
// soak's budgets, three `budget` turns each ask for an extension; one is approved (it
// resumes and answers), one refused (it stops at once), one left to its deadline (refused
// by the timer: it stops too). The checker finds nothing; then
// each answer is turned around in the database, or the request asked again, and the
// checker must name it. Every change is undone afterwards.
// The same agent asks questions (`ask_user`, scripts/soak/checker/questions.ts): one is
// answered, one declined, one left to its `question_timeout_ms`; each answer's result,
// then each deadline, is broken the same way. Last, the soak's AG-UI thread follower reads
// that session's thread stream (scripts/soak/checker/aguiThreads.ts): the events it kept
// match the journal's fold, and one lost, sent twice or moved is named.

let server: TestServer;
const ledger = new Ledger();
const turns: Record<string, { sessionId: string; turnId: string; requestId: string }> = {};

async function events(sessionId: string): Promise<any[]> {
  return journalOf(server.db, sessionId);
}

/** `approved: null`: nobody answers, the request's deadline ends it. */
async function budgetTurn(turnId: string, approved: boolean | null, sessionId?: string) {
  const message = budgetMessage();
  const body: Record<string, string> = { turn_id: turnId, message };
  if (sessionId) body.session_id = sessionId;
  const admitted = await request(server.url, 'POST', '/api/v1/chat/turns', body);
  expect(admitted.status).toBe(202);
  const session = admitted.body.session_id as string;
  ledger.acknowledge({
    turnId,
    sessionId: session,
    kind: 'budget',
    message,
    sequence: admitted.body.sequence,
  });
  const asked = (
    await until(
      () => events(session),
      (rows) => rows.some((row) => row.type === 'input_required' && row.turn_id === turnId),
      `the budget request of ${turnId}`,
    )
  ).find((row) => row.type === 'input_required' && row.turn_id === turnId);
  expect(asked.payload.kind).toBe('budget_extension');
  await until(
    () => request(server.url, 'GET', `/api/v1/chat/sessions/${session}`),
    (projection) => projection.body.state === 'input_required',
    'the session waiting for a person',
  );
  if (approved !== null) {
    const answered = await request(
      server.url,
      'POST',
      `/api/v1/chat/sessions/${session}/inputs/${asked.payload.request_id}`,
      { expected_sequence: asked.sequence, approved },
    );
    expect(answered.status).toBe(200);
    ledger.answers.push({ sessionId: session, requestId: asked.payload.request_id, approved });
  }
  await until(
    () => events(session),
    (rows) => rows.some((row) => row.type === 'done' && row.payload.turn_ids.includes(turnId)),
    `the end of ${turnId}`,
  );
  return { sessionId: session, turnId, requestId: asked.payload.request_id as string };
}

const questionTimeoutMs = 400;

/** A `question` turn: answered (`true`), declined (`false`) or left to its deadline (`null`). */
async function questionTurn(turnId: string, approved: boolean | null, sessionId?: string) {
  const message = messageFor('question', turnId, new Random(1));
  const body: Record<string, string> = { turn_id: turnId, message };
  if (sessionId) body.session_id = sessionId;
  const admitted = await request(server.url, 'POST', '/api/v1/chat/turns', body);
  expect(admitted.status).toBe(202);
  const session = admitted.body.session_id as string;
  ledger.acknowledge({
    turnId,
    sessionId: session,
    kind: 'question',
    message,
    sequence: admitted.body.sequence,
  });
  const asked = (
    await until(
      () => events(session),
      (rows) => rows.some((row) => row.type === 'input_required' && row.turn_id === turnId),
      `the question of ${turnId}`,
    )
  ).find((row) => row.type === 'input_required' && row.turn_id === turnId);
  expect(asked.payload.kind).toBe('question');
  if (approved !== null) {
    await until(
      () => request(server.url, 'GET', `/api/v1/chat/sessions/${session}`),
      (projection) => projection.body.state === 'input_required',
      'the session waiting for a person',
    );
    const answer = answerTo(asked.payload.prompt);
    const answered = await request(
      server.url,
      'POST',
      `/api/v1/chat/sessions/${session}/inputs/${asked.payload.request_id}`,
      {
        expected_sequence: asked.sequence,
        approved,
        response: approved ? { answer } : { reason: 'no' },
      },
    );
    expect(answered.status).toBe(200);
    ledger.answers.push({
      sessionId: session,
      requestId: asked.payload.request_id,
      approved,
      ...(approved ? { answer } : {}),
    });
  }
  await until(
    () => events(session),
    (rows) => rows.some((row) => row.type === 'done' && row.payload.turn_ids.includes(turnId)),
    `the end of ${turnId}`,
  );
  return { sessionId: session, turnId, requestId: asked.payload.request_id as string };
}

beforeAll(async () => {
  server = await startTestServer({
    agents: {
      default: {
        model: 'demo/echo',
        tools: { clock: 'allow', ask_user: 'allow' },
        budgets: soakBudgets,
        question_timeout_ms: questionTimeoutMs,
      },
      [stepsAgent]: { model: 'demo/echo', tools: { clock: 'allow' }, budgets: stepBudgets },
    },
  });
  turns.approved = await budgetTurn('budget_1', true);
  turns.refused = await budgetTurn('budget_2', false, turns.approved.sessionId);
  turns.unanswered = await budgetTurn('budget_3', null, turns.approved.sessionId);
  turns.answeredQuestion = await questionTurn('question_1', true);
  const { sessionId } = turns.answeredQuestion;
  turns.declinedQuestion = await questionTurn('question_2', false, sessionId);
  turns.unansweredQuestion = await questionTurn('question_3', null, sessionId);
  // A turn of the agent whose one model step runs out (`on_exhausted: finish`).
  const message = stepsMessage('steps_1');
  const body = { turn_id: 'steps_1', message, agent: stepsAgent };
  const admitted = await request(server.url, 'POST', '/api/v1/chat/turns', body);
  expect(admitted.status).toBe(202);
  const steps = admitted.body.session_id as string;
  const { sequence } = admitted.body;
  ledger.acknowledge({ turnId: 'steps_1', sessionId: steps, kind: 'steps', message, sequence });
  await until(
    () => events(steps),
    (rows) => rows.some((row) => row.type === 'done'),
    'the end of steps_1',
  );
  turns.steps = { sessionId: steps, turnId: 'steps_1', requestId: '' };
}, 120_000);

afterAll(async () => {
  await server?.close();
});

async function expectFound(category: Category, rule: string, told: Ledger = ledger): Promise<void> {
  const found = (await checkDatabase(server.db, told, { questionTimeoutMs })).findings.violations;
  expect(
    found.some((violation) => violation.category === category && violation.check === rule),
    `expected ${category}/${rule} among ${JSON.stringify(found)}`,
  ).toBe(true);
}

async function withApproved(requestId: string, approved: boolean, body: () => Promise<void>) {
  const flip = (value: boolean) =>
    server.db.query('update input_requests set approved = $2 where request_id = $1', [
      requestId,
      value,
    ]);
  await flip(approved);
  try {
    await body();
  } finally {
    await flip(!approved);
  }
}

async function finalOf(turnId: string): Promise<string> {
  const found = await server.db.query<{ content: string }>(
    "select content from messages where turn_id = $1 and role = 'assistant'",
    [turnId],
  );
  return String(found.rows[0]?.content);
}

describe('the budget rule on a clean journal', () => {
  it('finds nothing: an approved extension resumed, a refused one stopped, so did one unanswered', async () => {
    const result = await checkDatabase(server.db, ledger, { questionTimeoutMs });
    expect(result.findings.violations).toEqual([]);
    expect(result.budgetExtensions).toBe(2);
    expect(result.stepsStopped).toBe(1);
    expect(await finalOf('steps_1')).toBe(stepsStopText);
    expect(await finalOf('budget_1')).toContain('Tool clock returned');
    expect(await finalOf('budget_2')).toMatch(new RegExp(`^${stoppedPrefix}`));
    expect(await finalOf('budget_3')).toMatch(new RegExp(`^${stoppedPrefix}`));
    const timedOut = await server.db.query<{ state: string; approved: boolean }>(
      'select state, approved from input_requests where request_id = $1',
      [turns.unanswered?.requestId],
    );
    expect(timedOut.rows[0]).toEqual({ state: 'timeout', approved: false });
  });
});

describe('the budget rule finds each broken promise', () => {
  it('an approved extension whose turn stopped for want of budget is lost', async () => {
    await withApproved(turns.refused?.requestId as string, true, () =>
      expectFound('lost', 'approved extension resumes once'),
    );
  });

  it('a refused extension whose turn ran on is a mismatch', async () => {
    await withApproved(turns.approved?.requestId as string, false, () =>
      expectFound('mismatch', 'refused extension stops'),
    );
  });

  it('an extension ended by its deadline whose turn ran on is a mismatch', async () => {
    const requestId = turns.approved?.requestId as string;
    const set = (state: string, approved: boolean) =>
      server.db.query('update input_requests set state = $2, approved = $3 where request_id = $1', [
        requestId,
        state,
        approved,
      ]);
    await set('timeout', false);
    try {
      await expectFound('mismatch', 'refused extension stops');
    } finally {
      await set('answered', true);
    }
  });

  it('an approved extension asked again in the same turn did not resume once', async () => {
    const { sessionId, turnId } = turns.approved as { sessionId: string; turnId: string };
    const rows = await events(sessionId);
    const asked = rows.find((row) => row.type === 'input_required' && row.turn_id === turnId);
    // The same turn asks again (journaled at the end of its session).
    const again = { ...asked.payload, request_id: 'req_again', call_id: 'budget_again' };
    const sequence = (rows[rows.length - 1]?.sequence ?? 0) + 1;
    await server.db.query(
      `insert into events (session_id, sequence, type, turn_id, payload)
       values ($1, $2, 'input_required', $3, $4)`,
      [sessionId, sequence, turnId, JSON.stringify(again)],
    );
    try {
      await expectFound('lost', 'approved extension resumes once');
    } finally {
      await server.db.query('delete from events where session_id = $1 and sequence = $2', [
        sessionId,
        sequence,
      ]);
    }
    expect((await checkDatabase(server.db, ledger)).findings.violations).toEqual([]);
  });
});

describe('the step budget rule finds a turn that did not finish once', () => {
  it('a turn out of steps that replied, or asked for more, is a mismatch', async () => {
    const rule = 'a turn out of steps finishes once';
    const setReply = (content: string) =>
      server.db.query(
        "update messages set content = $2 where turn_id = $1 and role = 'assistant'",
        ['steps_1', content],
      );
    await setReply('Tool clock returned: 12:00');
    try {
      await expectFound('mismatch', rule);
    } finally {
      await setReply(stepsStopText);
    }
    const { sessionId } = turns.steps as { sessionId: string };
    const rows = await events(sessionId);
    const sequence = (rows[rows.length - 1]?.sequence ?? 0) + 1;
    const asked = { request_id: 'req_steps', kind: 'budget_extension', call_id: 'budget_1' };
    await server.db.query(
      `insert into events (session_id, sequence, type, turn_id, payload)
       values ($1, $2, 'input_required', 'steps_1', $3)`,
      [sessionId, sequence, JSON.stringify(asked)],
    );
    try {
      await expectFound('mismatch', rule);
    } finally {
      await server.db.query('delete from events where session_id = $1 and sequence = $2', [
        sessionId,
        sequence,
      ]);
    }
  });
});

describe('the question rules on a real journal', () => {
  async function resultOf(name: string): Promise<{ sequence: number; payload: any }> {
    const { sessionId, turnId } = turns[name] as { sessionId: string; turnId: string };
    const rows = await events(sessionId);
    const call = rows.find((row) => row.type === 'tool_call' && row.turn_id === turnId);
    return rows.find(
      (row) => row.type === 'tool_result' && row.payload.call_id === call.payload.call_id,
    );
  }

  async function withResult(
    name: string,
    change: (payload: any) => any,
    body: () => Promise<void>,
  ) {
    const { sessionId } = turns[name] as { sessionId: string };
    const result = await resultOf(name);
    const set = (payload: unknown) =>
      server.db.query('update events set payload = $3 where session_id = $1 and sequence = $2', [
        sessionId,
        result.sequence,
        JSON.stringify(payload),
      ]);
    await set(change(structuredClone(result.payload)));
    try {
      await body();
    } finally {
      await set(result.payload);
    }
  }

  it('finds nothing: the answer is the result, the refusal failed, the deadline told the model', async () => {
    expect((await resultOf('answeredQuestion')).payload).toMatchObject({
      ok: true,
      result: { answer: answerTo('which question_1?') },
    });
    expect((await resultOf('declinedQuestion')).payload.ok).toBe(false);
    expect((await resultOf('unansweredQuestion')).payload.error.code).toBe('question_timeout');
    expect(
      (await checkDatabase(server.db, ledger, { questionTimeoutMs })).findings.violations,
    ).toEqual([]);
  });

  it('an acknowledged answer that is not its result, or is no result at all, is lost', async () => {
    const told = new Ledger();
    const given = ledger.answers.find((answer) => answer.answer !== undefined);
    told.answers.push({ ...(given as (typeof ledger.answers)[number]), answer: 'another answer' });
    await expectFound('lost', "a question's acknowledged answer is its result", told);
    await withResult(
      'answeredQuestion',
      (payload) => ({ ...payload, ok: false, result: undefined, error: { code: 'rejected' } }),
      () => expectFound('lost', "a question's acknowledged answer is its result"),
    );
  });

  it('an answer journaled as two results is doubled; a declined question that succeeded is a mismatch', async () => {
    const { sessionId } = turns.answeredQuestion as { sessionId: string };
    const result = await resultOf('answeredQuestion');
    const rows = await events(sessionId);
    const sequence = (rows[rows.length - 1]?.sequence ?? 0) + 1;
    await server.db.query(
      `insert into events (session_id, sequence, type, turn_id, payload)
       values ($1, $2, 'tool_result', 'question_1', $3)`,
      [sessionId, sequence, JSON.stringify(result.payload)],
    );
    try {
      await expectFound('doubled', "a question's answer is its result once");
    } finally {
      await server.db.query('delete from events where session_id = $1 and sequence = $2', [
        sessionId,
        sequence,
      ]);
    }
    await withResult(
      'declinedQuestion',
      (payload) => ({ ...payload, ok: true, result: { answer: 'yes' }, error: undefined }),
      () => expectFound('mismatch', 'a declined question is no answer'),
    );
  });

  it('an unanswered question resolved early, past its timeout, or not told as a timeout is a mismatch', async () => {
    const requestId = turns.unansweredQuestion?.requestId as string;
    const rule = 'an unanswered question ends at its deadline';
    const shift = async (columns: string[], by: string, body: () => Promise<void>) => {
      const moved = columns.map((column) => `${column} = ${column} + interval '${by}'`);
      const back = columns.map((column) => `${column} = ${column} - interval '${by}'`);
      await server.db.query(`update input_requests set ${moved.join(', ')} where request_id = $1`, [
        requestId,
      ]);
      try {
        await body();
      } finally {
        await server.db.query(
          `update input_requests set ${back.join(', ')} where request_id = $1`,
          [requestId],
        );
      }
    };
    // Resolved a second before its deadline; a deadline (and its resolution) ten seconds
    // after it was asked, past the agent's timeout.
    await shift(['answered_at'], '-1 second', () => expectFound('mismatch', rule));
    await shift(['deadline_at', 'answered_at'], '10 seconds', () => expectFound('mismatch', rule));
    await withResult(
      'unansweredQuestion',
      (payload) => ({ ...payload, error: { code: 'rejected', message: 'rejected' } }),
      () => expectFound('mismatch', rule),
    );
    expect(
      (await checkDatabase(server.db, ledger, { questionTimeoutMs })).findings.violations,
    ).toEqual([]);
  });
});

/** The first event of an SSE answer; the connection is closed after it. */
async function readFirstEvent(response: Response): Promise<unknown> {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  let text = '';
  try {
    while (!text.includes('\n\n')) text += new TextDecoder().decode((await reader.read()).value);
  } finally {
    await reader.cancel();
  }
  const data = text.split('\n').find((line) => line.startsWith('data: ')) as string;
  return JSON.parse(data.slice(6));
}

describe('the AG-UI thread stream rule', () => {
  it('finds nothing in what the thread stream sent; names an event lost, doubled or moved', async () => {
    const followed = new Ledger();
    const { sessionId } = turns.answeredQuestion as { sessionId: string };
    await followThread(new Apis([server.url]), followed, new Random(1), sessionId, () => true);
    const record = followed.threads[0] as (typeof followed.threads)[number];
    const types = record.events.map((event) => event.type);
    // Three runs the thread stream did not start, two of them interrupted and continued.
    expect(types.filter((type) => type === 'RUN_STARTED')).toHaveLength(6);
    expect(types).toContain('TOOL_CALL_RESULT');
    // A reconnect where a continued run began re-opens that run, under its own id.
    const continued = record.events.find(
      (event) => event.type === 'RUN_STARTED' && String(event.runId).startsWith('question_1.'),
    );
    const cursor = String(continued?.runId).split('.')[1] as string;
    const reopened = await fetch(`${server.url}/ag-ui/default/threads/${sessionId}/events`, {
      headers: { accept: 'text/event-stream', 'last-event-id': cursor },
    });
    const first = await readFirstEvent(reopened);
    expect(first).toMatchObject({ type: 'RUN_STARTED', runId: continued?.runId });
    const found = async (events: typeof record.events) => {
      const told = new Ledger();
      told.threads.push({ ...record, events });
      const result = await checkDatabase(server.db, told, { questionTimeoutMs });
      return result.findings.violations.map((violation) => violation.category);
    };
    expect(await found(record.events)).toEqual([]);
    const at = types.indexOf('RUN_STARTED', 1);
    const without = record.events.filter((_event, index) => index !== at);
    expect(await found(without)).toEqual(['gap']);
    const twice = [...record.events.slice(0, at + 1), ...record.events.slice(at)];
    expect(await found(twice)).toEqual(['doubled']);
    const moved = [...record.events];
    moved.splice(at, 2, record.events[at + 1] as never, record.events[at] as never);
    expect(await found(moved)).toEqual(['order']);
  });
});
