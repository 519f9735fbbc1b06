import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readEvents } from '../src/store/readEvents.js';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// Sessions with state over HTTP (docs/governance.md): the projection carries `data` and
// `result` (every response is held to its route's schema), a closed session refuses a
// message with 409 session_closed and writes nothing, and an admin may edit `data`
// (validated, journaled as `state_changed` by admin).
const keys = { K_ALICE: 'alice-key-51c0', K_ADA: 'ada-key-93ef' };
const principals = {
  owner: { authorization: `Bearer ${keys.K_ALICE}` },
  admin: { authorization: `Bearer ${keys.K_ADA}` },
};

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer(
    {
      auth: {
        keys: [
          { key_env: 'K_ALICE', tenant: 'acme', user: 'alice' },
          { key_env: 'K_ADA', tenant: 'acme', user: 'ada', roles: ['admin'] },
        ],
      },
      agents: {
        default: {
          tools: { calculator: 'approve' },
          state: {
            schema: {
              type: 'object',
              properties: { step: { type: 'integer', minimum: 0 } },
              required: ['step'],
            },
            initial: { step: 0 },
          },
        },
        queueing: {
          pending_input: 'queue',
          tools: { calculator: 'approve' },
          state: { schema: { type: 'object' }, initial: {} },
        },
        plain: {},
      },
    },
    keys,
  );
});
afterAll(async () => {
  await server?.close();
});

const call = (who: keyof typeof principals, method: string, path: string, body?: unknown) =>
  request(server.url, method, path, body, principals[who]);

let counter = 0;
const turnId = () => `sa_${Date.now()}_${counter++}`;

async function session(agent: string): Promise<string> {
  const created = await call('owner', 'POST', '/api/v1/chat/sessions', { agent });
  expect(created.status).toBe(201);
  expect(created.body).toMatchObject({ data: null, result: null });
  return created.body.session_id as string;
}

const eventCount = async (sessionId: string) =>
  (
    await server.db.query<{ n: number }>(
      'select count(*)::int as n from events where session_id = $1',
      [sessionId],
    )
  ).rows[0]?.n;

describe('a completed session over HTTP', () => {
  it('shows state closed with data and result, and refuses a message with 409', async () => {
    const sessionId = await session('default');
    const admitted = await call('owner', 'POST', '/api/v1/chat/turns', {
      session_id: sessionId,
      turn_id: turnId(),
      message: '/tool update_state {"set": {"step": 3}, "result": "ok", "complete": true}',
    });
    expect(admitted.status).toBe(202);
    const closed = await until(
      () => call('owner', 'GET', `/api/v1/chat/sessions/${sessionId}`),
      (found) => found.body.state === 'closed',
      'the session is closed',
    );
    expect(closed.body).toMatchObject({ data: { step: 3 }, result: 'ok' });
    const before = await eventCount(sessionId);
    const refused = await call('owner', 'POST', '/api/v1/chat/turns', {
      session_id: sessionId,
      turn_id: turnId(),
      message: 'anything else?',
    });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toBe('session_closed');
    expect(await eventCount(sessionId)).toBe(before);
  });
});

describe('a session completed while a message waits behind its turn', () => {
  it('ends the waiting turn with error session_closed', async () => {
    const sessionId = await session('queueing');
    const path = `/api/v1/chat/sessions/${sessionId}`;
    const first = await call('owner', 'POST', '/api/v1/chat/turns', {
      session_id: sessionId,
      turn_id: turnId(),
      message:
        '/tool update_state {"set": {"done": true}, "complete": true}\n/tool calculator {"expression": "1+1"}',
    });
    expect(first.status).toBe(202);
    const waiting = await until(
      () => call('owner', 'GET', path),
      (found) => found.body.state === 'input_required',
      'the approval request',
    );
    const second = turnId();
    const queued = await call('owner', 'POST', '/api/v1/chat/turns', {
      session_id: sessionId,
      turn_id: second,
      message: 'and then?',
    });
    expect(queued.status).toBe(202);
    const pending = waiting.body.pending_input as { request_id: string; expected_sequence: number };
    const answered = await call('admin', 'POST', `${path}/inputs/${pending.request_id}`, {
      expected_sequence: pending.expected_sequence,
      approved: true,
    });
    expect(answered.status).toBe(200);
    const closed = await until(
      () => call('owner', 'GET', path),
      (found) => found.body.state === 'closed',
      'the session is closed',
    );
    expect(closed.body).toMatchObject({ data: { done: true }, queued_turns: 0 });
    const events = (await readEvents(server.db, sessionId, 0, 10_000)) as {
      type: string;
      code?: string;
      turn_ids?: string[];
    }[];
    expect(events.filter((event) => event.type === 'error')).toEqual([
      expect.objectContaining({ code: 'session_closed', turn_ids: [second] }),
    ]);
  });
});

describe('an admin edits the data', () => {
  it('validates, writes and journals state_changed by admin', async () => {
    const sessionId = await session('default');
    const path = `/api/v1/chat/sessions/${sessionId}`;
    const edited = await call('admin', 'PATCH', path, { data: { step: 7 } });
    expect(edited.status).toBe(200);
    expect(edited.body.data).toEqual({ step: 7 });
    const changed = await server.db.query<{ payload: unknown }>(
      `select payload from events where session_id = $1 and type = 'state_changed'`,
      [sessionId],
    );
    expect(changed.rows).toHaveLength(1);
    const invalid = await call('admin', 'PATCH', path, { data: { step: -1 } });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error).toBe('invalid_request');
    const notAdmin = await call('owner', 'PATCH', path, { data: { step: 1 } });
    expect(notAdmin.status).toBe(403);
    expect((await call('owner', 'GET', path)).body.data).toEqual({ step: 7 });
  });

  it('refuses an edit while a turn waits for a person halfway (its commit would write over it)', async () => {
    const sessionId = await session('default');
    const admitted = await call('owner', 'POST', '/api/v1/chat/turns', {
      session_id: sessionId,
      turn_id: turnId(),
      message: '/tool calculator {"expression": "1+1"}',
    });
    expect(admitted.status).toBe(202);
    await until(
      () => call('owner', 'GET', `/api/v1/chat/sessions/${sessionId}`),
      (found) => found.body.state === 'input_required',
      'the approval request',
    );
    const busy = await call('admin', 'PATCH', `/api/v1/chat/sessions/${sessionId}`, {
      data: { step: 2 },
    });
    expect(busy.status).toBe(409);
    expect(busy.body.error).toBe('session_busy');
    expect((await call('owner', 'GET', `/api/v1/chat/sessions/${sessionId}`)).body.data).toBeNull();
  });

  it('refuses data for a session whose agent keeps no state', async () => {
    const sessionId = await session('plain');
    const refused = await call('admin', 'PATCH', `/api/v1/chat/sessions/${sessionId}`, {
      data: { step: 1 },
    });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ error: 'invalid_request' });
  });
});
