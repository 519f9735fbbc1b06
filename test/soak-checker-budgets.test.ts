import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { budgetMessage, soakBudgets, stoppedPrefix } from '../scripts/soak/budgets.js';
import { checkDatabase, type Category } from '../scripts/soak/checker/index.js';
import { Ledger } from '../scripts/soak/ledger.js';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// The soak's budget rule (scripts/soak/checker/budgets.ts) on a real journal: with the
// soak's budgets, three `budget` turns each ask for an extension; one is approved (it
// resumes and answers), one refused (it stops at once), one left to its deadline (refused
// by the timer: it stops too). The checker finds nothing; then
// each answer is turned around in the database, or the request asked again, and the
// checker must name it. Every change is undone afterwards.

let server: TestServer;
const ledger = new Ledger();
const turns: Record<string, { sessionId: string; turnId: string; requestId: string }> = {};

async function events(sessionId: string): Promise<any[]> {
  const found = await server.db.query<any>(
    'select sequence, type, turn_id, payload from events where session_id = $1 order by sequence',
    [sessionId],
  );
  return found.rows;
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

beforeAll(async () => {
  server = await startTestServer({
    agents: { default: { model: 'demo/echo', tools: { clock: 'allow' }, budgets: soakBudgets } },
  });
  turns.approved = await budgetTurn('budget_1', true);
  turns.refused = await budgetTurn('budget_2', false, turns.approved.sessionId);
  turns.unanswered = await budgetTurn('budget_3', null, turns.approved.sessionId);
}, 120_000);

afterAll(async () => {
  await server?.close();
});

async function expectFound(category: Category, rule: string): Promise<void> {
  const found = (await checkDatabase(server.db, ledger)).findings.violations;
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
    const result = await checkDatabase(server.db, ledger);
    expect(result.findings.violations).toEqual([]);
    expect(result.budgetExtensions).toBe(2);
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
      `insert into events (session_id, sequence, tenant, type, turn_id, payload)
       values ($1, $2, 'default', 'input_required', $3, $4)`,
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
