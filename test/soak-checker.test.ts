import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkDatabase, type Category } from '../scripts/soak/checker/index.js';
import { Ledger, type TurnKind } from '../scripts/soak/ledger.js';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';
import { journalOf } from './support/journal.js';

// The soak's checker (scripts/soak/checker) on a real journal: a server answers plain
// turns, approved, rejected and cancelled tool calls and an allowed tool; the checker
// finds nothing. Then each rule is broken in the database itself (or in what the clients
// were told) and the checker must name it, in the right figure. Every corruption is
// undone afterwards, so each case sees the clean journal plus one fault.

let server: TestServer;
const ledger = new Ledger();
const turns: Record<string, { sessionId: string; turnId: string }> = {};
let counter = 0;

async function admit(kind: TurnKind, message: string, sessionId?: string) {
  counter += 1;
  const turnId = `check_${counter}`;
  const body: Record<string, unknown> = { turn_id: turnId, message };
  if (sessionId) body.session_id = sessionId;
  if (kind === 'client_tool') body.client_tools = [{ name: 'lookup' }];
  const answer = await request(server.url, 'POST', '/api/v1/chat/turns', body);
  expect(answer.status).toBe(202);
  ledger.acknowledge({
    turnId,
    sessionId: answer.body.session_id,
    kind,
    message,
    sequence: answer.body.sequence,
  });
  return { sessionId: answer.body.session_id as string, turnId };
}

async function events(sessionId: string): Promise<any[]> {
  return journalOf(server.db, sessionId);
}

async function eventOf(sessionId: string, type: string, turnId: string): Promise<any> {
  const list = await until(
    () => events(sessionId),
    (rows) => rows.some((row) => row.type === type && row.turn_id === turnId),
    `${type} of ${turnId}`,
  );
  return list.find((row) => row.type === type && row.turn_id === turnId);
}

async function ended(sessionId: string, turnId: string): Promise<void> {
  await until(
    () => events(sessionId),
    (rows) =>
      rows.some(
        (row) =>
          ['done', 'cancelled', 'error'].includes(row.type) &&
          row.payload.turn_ids.includes(turnId),
      ),
    `the end of ${turnId}`,
  );
}

async function answer(sessionId: string, turnId: string, approved: boolean): Promise<void> {
  const asked = await eventOf(sessionId, 'input_required', turnId);
  // Answered only once the worker has handed the session back: an answer that lands
  // between `input_required` and that hand-over is lost today (the session stays
  // input_required with nothing pending), which the soak reports; this file tests the
  // checker, not that race.
  await until(
    () => request(server.url, 'GET', `/api/v1/chat/sessions/${sessionId}`),
    (projection) => projection.body.state === 'input_required',
    'the session waiting for a person',
  );
  const answered = await request(
    server.url,
    'POST',
    `/api/v1/chat/sessions/${sessionId}/inputs/${asked.payload.request_id}`,
    { expected_sequence: asked.sequence, approved },
  );
  expect(answered.status).toBe(200);
  ledger.answers.push({ sessionId, requestId: asked.payload.request_id, approved });
}

beforeAll(async () => {
  server = await startTestServer({
    agents: { default: { model: 'demo/echo', tools: { calculator: 'approve', clock: 'allow' } } },
  });
  const plain = await admit('plain', 'check one two three');
  const sessionId = plain.sessionId;
  await ended(sessionId, plain.turnId);
  const approved = await admit('approval', '/tool calculator {"expression": "6*7"}', sessionId);
  await answer(sessionId, approved.turnId, true);
  await ended(sessionId, approved.turnId);
  const rejected = await admit('approval', '/tool calculator {"expression": "1+1"}', sessionId);
  await answer(sessionId, rejected.turnId, false);
  await ended(sessionId, rejected.turnId);
  const clock = await admit('clock', '/tool clock {}', sessionId);
  await ended(sessionId, clock.turnId);
  const second = await admit('plain', 'check four five');
  await ended(second.sessionId, second.turnId);
  // Cancelled while it waits for an approval: the turn ends `cancelled`, nothing runs.
  const cancelled = await admit(
    'cancel',
    '/tool calculator {"expression": "2*2"}',
    second.sessionId,
  );
  await eventOf(second.sessionId, 'input_required', cancelled.turnId);
  const cancel = await request(
    server.url,
    'POST',
    `/api/v1/chat/sessions/${second.sessionId}/turns/${cancelled.turnId}/cancel`,
    { command_id: 'cancel_check' },
  );
  expect(cancel.status).toBe(200);
  ledger.cancels.push({
    sessionId: second.sessionId,
    turnId: cancelled.turnId,
    commandId: 'cancel_check',
    result: cancel.body.result,
    state: cancel.body.state,
  });
  await ended(second.sessionId, cancelled.turnId);
  // A call of the client's own tool, answered with its output.
  const client = await admit('client_tool', '/tool lookup {"key": "k"}', second.sessionId);
  const call = await eventOf(second.sessionId, 'input_required', client.turnId);
  const output = await request(
    server.url,
    'POST',
    `/api/v1/chat/sessions/${second.sessionId}/inputs/${call.payload.request_id}`,
    { expected_sequence: call.sequence, approved: true, response: { output: 'found k' } },
  );
  expect(output.status).toBe(200);
  ledger.answers.push({
    sessionId: second.sessionId,
    requestId: call.payload.request_id,
    approved: true,
    output: 'found k',
  });
  await ended(second.sessionId, client.turnId);
  Object.assign(turns, { plain, approved, rejected, clock, second, cancelled, client });
}, 120_000);

afterAll(async () => {
  await server?.close();
});

async function findings(from: Ledger = ledger) {
  const result = await checkDatabase(server.db, from);
  return result.findings.violations;
}

async function expectFound(
  category: Category,
  check: string,
  from: Ledger = ledger,
): Promise<void> {
  const found = await findings(from);
  expect(
    found.some((violation) => violation.category === category && violation.check === check),
    `expected ${category}/${check} among ${JSON.stringify(found)}`,
  ).toBe(true);
}

/** Appends a copy of one event (optionally changed) at the end of its session's journal. */
async function appendCopy(
  sessionId: string,
  pick: (row: any) => boolean,
  change: (row: any) => any = (row) => row,
): Promise<() => Promise<void>> {
  const rows = await events(sessionId);
  const source = change(structuredClone(rows.find(pick)));
  const sequence = (rows[rows.length - 1]?.sequence ?? 0) + 1;
  await server.db.query(
    `insert into events (session_id, sequence, type, turn_id, payload)
     values ($1, $2, $3, $4, $5)`,
    [sessionId, sequence, source.type, source.turn_id, JSON.stringify(source.payload)],
  );
  await server.db.query('update sessions set last_sequence = $2 where session_id = $1', [
    sessionId,
    sequence,
  ]);
  return async () => {
    await server.db.query('delete from events where session_id = $1 and sequence = $2', [
      sessionId,
      sequence,
    ]);
    await server.db.query('update sessions set last_sequence = $2 where session_id = $1', [
      sessionId,
      sequence - 1,
    ]);
  };
}

describe('the soak checker on a clean journal', () => {
  it('finds nothing in what a server wrote, and counts what is there', async () => {
    const result = await checkDatabase(server.db, ledger);
    expect(result.findings.violations).toEqual([]);
    expect(result.totals.turns).toBe(ledger.turns.size);
    expect(result.totals.sessions).toBe(2);
    // Approved calculator, rejected calculator, the clock, the client's lookup: four results.
    expect(result.totals.toolResults).toBe(4);
  });
});

describe('the soak checker finds each broken rule', () => {
  it('a hole in a journal is a gap, counted per missing sequence', async () => {
    const { sessionId } = turns.plain as { sessionId: string };
    const removed = (
      await server.db.query<any>(
        'delete from events where session_id = $1 and sequence = 3 returning *',
        [sessionId],
      )
    ).rows[0];
    try {
      const result = await checkDatabase(server.db, ledger);
      expect(result.findings.count('gap')).toBe(1);
      expect(result.findings.missingSequences).toBe(1);
    } finally {
      await server.db.query(
        'insert into events (session_id, sequence, type, turn_id, payload, at, message_id, message_offset) values ($1, $2, $3, $4, $5, $6, $7, $8)',
        [
          removed.session_id,
          removed.sequence,
          removed.type,
          removed.turn_id,
          JSON.stringify(removed.payload),
          removed.at,
          removed.message_id,
          removed.message_offset,
        ],
      );
    }
    expect(await findings()).toEqual([]);
  });

  it('a second terminal event for a turn is doubled', async () => {
    const { sessionId, turnId } = turns.plain as { sessionId: string; turnId: string };
    const undo = await appendCopy(
      sessionId,
      (row) => row.type === 'done' && row.turn_id === turnId,
    );
    try {
      await expectFound('doubled', 'terminal exactly once');
    } finally {
      await undo();
    }
  });

  it('a second result for one tool call is a tool run twice', async () => {
    const { sessionId, turnId } = turns.clock as { sessionId: string; turnId: string };
    const undo = await appendCopy(
      sessionId,
      (row) => row.type === 'tool_result' && row.turn_id === turnId,
    );
    try {
      await expectFound('doubled', 'no tool run twice');
    } finally {
      await undo();
    }
  });

  it('a rejected call that reports a success ran though it was rejected', async () => {
    const { sessionId, turnId } = turns.rejected as { sessionId: string; turnId: string };
    const result = await eventOf(sessionId, 'tool_result', turnId);
    const original = result.payload;
    await server.db.query(
      'update events set payload = $3 where session_id = $1 and sequence = $2',
      [
        sessionId,
        result.sequence,
        JSON.stringify({ call_id: original.call_id, tool: original.tool, ok: true, result: 2 }),
      ],
    );
    try {
      await expectFound('mismatch', 'rejected never runs');
    } finally {
      await server.db.query(
        'update events set payload = $3 where session_id = $1 and sequence = $2',
        [sessionId, result.sequence, JSON.stringify(original)],
      );
    }
  });

  it("a client tool's output acknowledged but not its call's result is lost; a timed-out call that succeeded is a mismatch", async () => {
    const told = new Ledger();
    const given = ledger.answers.find((candidate) => candidate.output !== undefined);
    told.answers.push({ ...(given as (typeof ledger.answers)[number]), output: 'found j' });
    await expectFound('lost', "a client tool's acknowledged output is its result", told);

    const requestId = (given as { requestId: string }).requestId;
    await server.db.query(`update input_requests set state = 'timeout' where request_id = $1`, [
      requestId,
    ]);
    try {
      await expectFound('mismatch', "a client tool's deadline fails its call");
    } finally {
      await server.db.query(`update input_requests set state = 'answered' where request_id = $1`, [
        requestId,
      ]);
    }
  });

  it('a request ended by its deadline but resolved by someone else is a mismatch', async () => {
    const { sessionId } = turns.rejected as { sessionId: string; turnId: string };
    // The rejected request was answered by a person; call its row timed out.
    const row = await server.db.query<{ request_id: string; state: string }>(
      `select request_id, state from input_requests where session_id = $1 and approved = false`,
      [sessionId],
    );
    const { request_id: requestId, state } = row.rows[0] as { request_id: string; state: string };
    await server.db.query(`update input_requests set state = 'timeout' where request_id = $1`, [
      requestId,
    ]);
    try {
      await expectFound('mismatch', 'deadline ends a request once, rejected');
    } finally {
      await server.db.query('update input_requests set state = $2 where request_id = $1', [
        requestId,
        state,
      ]);
    }
  });

  it('a delta after its turn ended is out of order', async () => {
    const { sessionId, turnId } = turns.plain as { sessionId: string; turnId: string };
    const undo = await appendCopy(
      sessionId,
      (row) => row.type === 'text_delta' && row.turn_id === turnId,
    );
    try {
      await expectFound('order', 'nothing after the end');
    } finally {
      await undo();
    }
  });

  it('a reply that is not its done, or not the echo of its turn, is a mismatch', async () => {
    const { turnId } = turns.plain as { turnId: string };
    // A reply streamed in one batch keeps its text once, in the transcript row its delta
    // refers to; give the delta its own copy (the form of a reply streamed in several
    // batches, the same events on the wire) so that the transcript can differ from it.
    await server.db.query(
      `update events e set payload = e.payload || jsonb_build_object('delta', m.content),
              message_offset = null
         from messages m
        where m.session_id = e.session_id and m.sequence = e.sequence + e.message_offset
          and e.type = 'text_delta' and m.turn_id = $1 and m.role = 'assistant'`,
      [turnId],
    );
    await server.db.query(
      `update messages set content = content || ' (edited)' where turn_id = $1 and role = 'assistant'`,
      [turnId],
    );
    try {
      await expectFound('mismatch', 'reply kept as sent');
    } finally {
      await server.db.query(
        `update messages set content = replace(content, ' (edited)', '') where turn_id = $1 and role = 'assistant'`,
        [turnId],
      );
    }
    const told = new Ledger();
    for (const turn of ledger.turns.values()) told.turns.set(turn.turnId, { ...turn });
    (told.turns.get(turnId) as { message: string }).message = 'check one two four';
    await expectFound('mismatch', 'reply is the echo', told);
  });

  it('a turn row that disagrees with its terminal event is a mismatch', async () => {
    const { turnId } = turns.clock as { turnId: string };
    await server.db.query(`update turns set state = 'error' where turn_id = $1`, [turnId]);
    try {
      await expectFound('mismatch', 'turn row agrees');
    } finally {
      await server.db.query(`update turns set state = 'done' where turn_id = $1`, [turnId]);
    }
  });

  it('a 202 for a turn the database does not hold is lost', async () => {
    const told = new Ledger();
    told.acknowledge({
      turnId: 'never_stored',
      sessionId: 'nowhere',
      kind: 'plain',
      message: 'x',
      sequence: 1,
    });
    await expectFound('lost', 'acknowledged turn kept', told);
  });

  it('an acknowledgement that named no sequence (an OpenAI response) is held to its session', async () => {
    const { turnId, sessionId } = turns.clock as { turnId: string; sessionId: string };
    const right = new Ledger();
    right.acknowledge({ turnId, sessionId, kind: 'clock', message: 'x', sequence: null });
    const found = await findings(right);
    expect(found.filter((violation) => violation.check === 'acknowledged turn kept')).toEqual([]);
    const wrong = new Ledger();
    wrong.acknowledge({
      turnId,
      sessionId: 'elsewhere',
      kind: 'clock',
      message: 'x',
      sequence: null,
    });
    await expectFound('mismatch', 'acknowledged turn kept', wrong);
  });

  it('an answer acknowledged with 200 but journaled otherwise is lost', async () => {
    const told = new Ledger();
    const { answers } = ledger;
    const rejected = answers.find((candidate) => !candidate.approved);
    told.answers.push({ ...(rejected as (typeof answers)[number]), approved: true });
    await expectFound('lost', 'acknowledged answer kept', told);
  });

  it('a cancel answered cancelled for a turn that ended done is a mismatch', async () => {
    const told = new Ledger();
    const { sessionId, turnId } = turns.clock as { sessionId: string; turnId: string };
    told.cancels.push({
      sessionId,
      turnId,
      commandId: 'made_up',
      result: 'cancelled',
      state: 'cancelling',
    });
    await expectFound('mismatch', 'cancel honoured', told);
    const tooLate = new Ledger();
    const cancelled = turns.cancelled as { sessionId: string; turnId: string };
    tooLate.cancels.push({ ...cancelled, commandId: 'made_up', result: 'too_late', state: 'done' });
    await expectFound('mismatch', 'too late means already ended', tooLate);
  });

  it('what clients saw on the wire counts: a gap in a stream, a doubled end', async () => {
    const told = new Ledger();
    told.violation('stream gap', 'after 3 the stream delivered 5');
    told.violation('stream doubled', 'turn t ended twice');
    const result = await checkDatabase(server.db, told);
    expect(result.findings.count('gap')).toBe(1);
    expect(result.findings.count('doubled')).toBe(1);
  });

  it('a lease still held by a process stopped with SIGTERM is a mismatch; one of a killed process is not', async () => {
    const { sessionId } = turns.plain as { sessionId: string };
    await server.db.query(
      `update sessions set lease_token = 'left', lease_owner = 'soak-host:4242' where session_id = $1`,
      [sessionId],
    );
    try {
      const stopped = await checkDatabase(server.db, ledger, { stoppedPids: new Set([4242]) });
      expect(stopped.findings.violations.map((violation) => violation.check)).toEqual([
        'leases released at shutdown',
      ]);
      const killed = await checkDatabase(server.db, ledger, { stoppedPids: new Set([4343]) });
      expect(killed.findings.violations).toEqual([]);
    } finally {
      await server.db.query(
        `update sessions set lease_token = null, lease_owner = null where session_id = $1`,
        [sessionId],
      );
    }
  });
});

describe('the soak checker on a turn nobody answers', () => {
  it('reports it unfinished', async () => {
    const apiOnly = await startTestServer({}, {}, { api: true, worker: false });
    try {
      const admitted = await request(apiOnly.url, 'POST', '/api/v1/chat/turns', {
        turn_id: 'waits_forever',
        message: 'nobody works here',
      });
      expect(admitted.status).toBe(202);
      const result = await checkDatabase(apiOnly.db);
      expect(result.findings.violations).toEqual([
        expect.objectContaining({ category: 'unfinished', check: 'every turn ends' }),
      ]);
    } finally {
      await apiOnly.close();
    }
  });
});
