import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allTurnsFinished, checkJournalInvariants } from './support/invariants.js';
import { journal, waitUntil } from './support/runtime-helpers.js';
import { request, startTestServer, type TestServer } from './support/server.js';

/**
 * PROTOCOL.md §2: `turn_id` is the client's idempotency key. Retries (here: 20 at once,
 * racing each other) get the same 202 body and write nothing more; the same key with
 * other input is a 409 turn_conflict that writes nothing at all.
 */

let server: TestServer;
let counter = 0;
const turnId = () => `idem_${Date.now()}_${counter++}`;

beforeAll(async () => {
  server = await startTestServer({
    agents: {
      default: { model: 'demo/echo' },
      other: { model: 'demo/echo' },
      greeter: { model: 'demo/echo', greeting: 'Welcome!' },
    },
  });
});
afterAll(async () => {
  await checkJournalInvariants(server.db);
  await server.close();
});

const admit = (body: Record<string, unknown>) =>
  request(server.url, 'POST', '/api/v1/chat/turns', body);

async function counts() {
  const found = await server.db.query<{
    sessions: number;
    turns: number;
    messages: number;
    events: number;
  }>(
    `select (select count(*)::int from sessions) as sessions,
            (select count(*)::int from turns) as turns,
            (select count(*)::int from messages) as messages,
            (select count(*)::int from events) as events`,
  );
  return found.rows[0];
}

/** How often the turn is in the transcript, the turns table and the journal. */
async function footprint(sessionId: string, id: string) {
  const userRows = await server.db.query<{ count: number }>(
    `select count(*)::int as count from messages where turn_id = $1 and role = 'user'`,
    [id],
  );
  const turnRows = await server.db.query<{ count: number; session_id: string }>(
    'select count(*)::int as count, min(session_id) as session_id from turns where turn_id = $1',
    [id],
  );
  const events = await journal(server.db, sessionId);
  return {
    userMessages: userRows.rows[0]?.count,
    turnRows: turnRows.rows[0]?.count,
    turnSession: turnRows.rows[0]?.session_id,
    messageEvents: events.filter((event) => event.type === 'message' && event.turn_id === id)
      .length,
    terminal: events.filter(
      (event) =>
        ['done', 'error', 'cancelled'].includes(event.type) &&
        (event.turn_ids as string[]).includes(id),
    ),
  };
}

async function settle() {
  await waitUntil(() => allTurnsFinished(server.db), 'every admitted turn is finished');
}

describe('the same turn retried concurrently', () => {
  it('20 concurrent retries into an existing session: one 202 body, one row, one event, one reply', async () => {
    const created = await request(server.url, 'POST', '/api/v1/chat/sessions', {});
    expect(created.status).toBe(201);
    const sessionId = created.body.session_id;
    const id = turnId();
    const body = { session_id: sessionId, turn_id: id, message: 'retry me twenty times' };

    const answers = await Promise.all(Array.from({ length: 20 }, () => admit(body)));
    for (const answer of answers) expect(answer.status).toBe(202);
    const first = answers[0]?.body;
    expect(first).toEqual({ session_id: sessionId, turn_id: id, sequence: 1, state: 'accepted' });
    for (const answer of answers) expect(answer.body).toEqual(first);

    await settle();
    const seen = await footprint(sessionId, id);
    expect(seen.userMessages).toBe(1);
    expect(seen.turnRows).toBe(1);
    expect(seen.messageEvents).toBe(1);
    expect(seen.terminal.map((event) => event.type)).toEqual(['done']);
    expect(seen.terminal[0]?.final_message.content).toBe('You said: retry me twenty times');

    // A retry after the turn completed still answers the same body and writes nothing.
    const before = await counts();
    const late = await admit(body);
    expect(late.status).toBe(202);
    expect(late.body).toEqual(first);
    expect(await counts()).toEqual(before);
  });

  it('20 concurrent first attempts without session_id create exactly one session', async () => {
    const before = await counts();
    const id = turnId();
    // The creating attempt stages the agent's greeting first: it must exist once.
    const body = { turn_id: id, agent: 'greeter', message: 'who creates the session' };

    const answers = await Promise.all(Array.from({ length: 20 }, () => admit(body)));
    for (const answer of answers) expect(answer.status).toBe(202);
    const first = answers[0]?.body;
    expect(first).toMatchObject({ turn_id: id, sequence: 2, state: 'accepted' });
    expect(typeof first.session_id).toBe('string');
    for (const answer of answers) expect(answer.body).toEqual(first);

    await settle();
    const after = await counts();
    expect(after?.sessions).toBe((before?.sessions ?? 0) + 1);
    expect(after?.turns).toBe((before?.turns ?? 0) + 1);
    const seen = await footprint(first.session_id, id);
    expect(seen.turnSession).toBe(first.session_id);
    expect(seen.userMessages).toBe(1);
    expect(seen.turnRows).toBe(1);
    expect(seen.messageEvents).toBe(1);
    expect(seen.terminal.map((event) => event.type)).toEqual(['done']);
    const events = await journal(server.db, first.session_id);
    expect(events.slice(0, 2)).toMatchObject([
      { type: 'message', sequence: 1, message: { role: 'assistant', content: 'Welcome!' } },
      { type: 'message', sequence: 2, turn_id: id, message: { role: 'user' } },
    ]);
    const greetings = await server.db.query<{ count: number }>(
      `select count(*)::int as count from messages where content = 'Welcome!'`,
    );
    expect(greetings.rows[0]?.count).toBe(1);

    // Later retries without session_id, and with the session_id now known, agree.
    const retry = await admit(body);
    expect(retry.status).toBe(202);
    expect(retry.body).toEqual(first);
    const withSession = await admit({ ...body, session_id: first.session_id });
    expect(withSession.status).toBe(202);
    expect(withSession.body).toEqual(first);
    const withoutAgent = await admit({ turn_id: id, message: body.message });
    expect(withoutAgent.status).toBe(202);
    expect(withoutAgent.body).toEqual(first);
  });

  it('concurrent first attempts with different messages: exactly one wins, the rest conflict', async () => {
    const before = await counts();
    const id = turnId();
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_unused, index) =>
        admit({ turn_id: id, message: `contender number ${index}` }),
      ),
    );
    const accepted = answers.filter((answer) => answer.status === 202);
    expect(accepted).toHaveLength(1);
    for (const answer of answers.filter((candidate) => candidate.status !== 202)) {
      expect(answer.status).toBe(409);
      expect(answer.body.error).toBe('turn_conflict');
    }
    await settle();
    const after = await counts();
    expect(after?.sessions).toBe((before?.sessions ?? 0) + 1);
    expect(after?.turns).toBe((before?.turns ?? 0) + 1);
    const seen = await footprint(accepted[0]?.body.session_id, id);
    expect(seen.userMessages).toBe(1);
    expect(seen.messageEvents).toBe(1);
  });
});

describe('the same turn_id with different input', () => {
  it('answers 409 turn_conflict and writes nothing', async () => {
    const id = turnId();
    const original = { turn_id: id, message: 'the original message' };
    const first = await admit(original);
    expect(first.status).toBe(202);
    const sessionId = first.body.session_id;
    const elsewhere = await request(server.url, 'POST', '/api/v1/chat/sessions', {});
    const otherAgents = await request(server.url, 'POST', '/api/v1/chat/sessions', {
      agent: 'other',
    });
    await settle();
    const before = await counts();

    const conflicting: Record<string, unknown>[] = [
      { turn_id: id, message: 'a different message' },
      { turn_id: id, session_id: sessionId, message: 'a different message' },
      { ...original, session_id: elsewhere.body.session_id },
      { ...original, session_id: otherAgents.body.session_id },
      { ...original, agent: 'other' },
      { ...original, session_id: sessionId, agent: 'other' },
      { ...original, option: { request_id: 'req_x', value: 'yes' } },
    ];
    for (const body of conflicting) {
      const answer = await admit(body);
      expect(answer.status, JSON.stringify(body)).toBe(409);
      expect(answer.body.error).toBe('turn_conflict');
      expect(typeof answer.body.message).toBe('string');
    }
    expect(await counts()).toEqual(before);
    const seen = await footprint(sessionId, id);
    expect(seen.userMessages).toBe(1);
    expect(seen.terminal).toHaveLength(1);

    // The original input is still accepted as a retry, with the original answer.
    const retry = await admit({ ...original, agent: 'default' });
    expect(retry.status).toBe(202);
    expect(retry.body).toEqual(first.body);
    expect(await counts()).toEqual(before);
  });
});
