import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ParleyClient } from '../src/client/index.js';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';
import { SseClient } from './support/sse.js';

// Sessions have an owner and a visibility (private | tenant | room). Every route that names
// a session answers a session its principal may not see exactly as it answers a missing
// one; lists and the inbox show only what may be seen.
const keys = {
  K_ALICE: 'alice-key-3e1f',
  K_BOB: 'bob-key-77a0',
  K_ANN: 'ann-key-c41d',
  K_MEG: 'meg-key-0b9e',
  K_ADA: 'ada-key-5d2c',
  K_GUS: 'gus-key-e8f3',
};
const as = (key: string) => ({ authorization: `Bearer ${key}` });
const principals = {
  owner: as(keys.K_ALICE),
  other: as(keys.K_BOB),
  approver: as(keys.K_ANN),
  member: as(keys.K_MEG),
  admin: as(keys.K_ADA),
  foreign: as(keys.K_GUS),
};
type Who = keyof typeof principals;
type Visibility = 'private' | 'tenant' | 'room';

/** Who sees a session of each visibility (the approver is one of its agent's approvers). */
const sees: Record<Who, Visibility[]> = {
  owner: ['private', 'tenant', 'room'],
  other: ['tenant'],
  approver: ['private', 'tenant', 'room'],
  member: ['tenant', 'room'],
  admin: ['private', 'tenant', 'room'],
  foreign: [],
};

let server: TestServer;
const missing = '01MISSINGSESSION0000000000';

beforeAll(async () => {
  server = await startTestServer(
    {
      auth: {
        keys: [
          { key_env: 'K_ALICE', tenant: 'acme', user: 'alice' },
          { key_env: 'K_BOB', tenant: 'acme', user: 'bob' },
          { key_env: 'K_ANN', tenant: 'acme', user: 'ann', roles: ['reviewer'] },
          { key_env: 'K_MEG', tenant: 'acme', user: 'meg' },
          { key_env: 'K_ADA', tenant: 'acme', user: 'ada', roles: ['admin'] },
          { key_env: 'K_GUS', tenant: 'globex', user: 'gus', roles: ['admin'] },
        ],
      },
      agents: {
        default: { approver_roles: ['reviewer'], tools: { calculator: 'approve' } },
        other: {},
        secret: {
          visibility: 'private',
          approver_roles: ['reviewer'],
          tools: { calculator: 'approve' },
        },
        open: { tools: { calculator: 'approve' } },
      },
      missions: { report: { agent: 'secret', prompt: 'Report, please.' } },
    },
    keys,
  );
});
afterAll(async () => {
  await server?.close();
});

const call = (who: Who, method: string, path: string, body?: unknown) =>
  request(server.url, method, path, body, principals[who]);

/** A session of `alice` whose turn waits for an approval of a calculator call. */
async function waitingSession(
  visibility: Visibility,
  agent = 'default',
): Promise<{ sessionId: string; requestId: string; expected: number }> {
  const created = await call('owner', 'POST', '/api/v1/chat/sessions', {
    agent,
    visibility,
    ...(visibility === 'room' ? { members: ['meg'] } : {}),
  });
  expect(created.status).toBe(201);
  expect(created.body).toMatchObject({ owner: 'alice', visibility });
  const sessionId = created.body.session_id as string;
  const admitted = await call('owner', 'POST', '/api/v1/chat/turns', {
    session_id: sessionId,
    turn_id: `wait_${visibility}_${agent}`,
    message: '/tool calculator {"expression": "6*7"}',
  });
  expect(admitted.status).toBe(202);
  const session = await until(
    () => call('owner', 'GET', `/api/v1/chat/sessions/${sessionId}`),
    (found) => found.body.pending_input !== null,
    'the approval request',
  );
  return {
    sessionId,
    requestId: session.body.pending_input.request_id,
    expected: session.body.pending_input.expected_sequence,
  };
}

interface Probe {
  name: string;
  method: string;
  path: (sessionId: string) => string;
  body?: unknown;
  headers?: Record<string, string>;
  /** Owner and admin may delete: the matrix leaves deletion to its own test. */
  skip?: (who: Who) => boolean;
}

/**
 * Every route that names a session, each with a request that does not change the session
 * when it is visible (it fails after the session check, or only reads), so the matrix can
 * run every principal against the same sessions.
 */
function probes(requestId: string, attachmentId: string): Probe[] {
  let n = 0;
  const unique = (prefix: string) => `${prefix}_${++n}_${Date.now()}`;
  return [
    { name: 'detail', method: 'GET', path: (id) => `/api/v1/chat/sessions/${id}` },
    { name: 'messages', method: 'GET', path: (id) => `/api/v1/chat/sessions/${id}/messages` },
    { name: 'checkpoints', method: 'GET', path: (id) => `/api/v1/chat/sessions/${id}/checkpoints` },
    { name: 'files', method: 'GET', path: (id) => `/api/v1/chat/sessions/${id}/files` },
    {
      name: 'turn admission',
      method: 'POST',
      path: () => '/api/v1/chat/turns',
      // `agent` names another agent: a visible session answers agent_mismatch, unchanged.
      get body() {
        return { session_id: '{id}', turn_id: unique('probe'), message: 'hi', agent: 'other' };
      },
    },
    {
      name: 'cancel',
      method: 'POST',
      path: (id) => `/api/v1/chat/sessions/${id}/turns/no_such_turn/cancel`,
      get body() {
        return { command_id: unique('cancel') };
      },
    },
    {
      name: 'answer',
      method: 'POST',
      path: (id) => `/api/v1/chat/sessions/${id}/inputs/${requestId}`,
      body: { expected_sequence: 0, approved: true },
    },
    {
      name: 'fork',
      method: 'POST',
      path: (id) => `/api/v1/chat/sessions/${id}/fork`,
      body: { at_sequence: 999_999 },
    },
    {
      name: 'rewind',
      method: 'POST',
      path: (id) => `/api/v1/chat/sessions/${id}/rewind`,
      body: { to_sequence: 999_999 },
    },
    {
      name: 'attachment upload',
      method: 'POST',
      path: (id) => `/api/v1/chat/sessions/${id}/attachments`,
      body: 'not an image',
      headers: { 'content-type': 'text/plain' },
    },
    {
      name: 'attachment',
      method: 'GET',
      path: (id) => `/api/v1/chat/sessions/${id}/attachments/${attachmentId}`,
    },
    {
      name: 'change visibility',
      method: 'PATCH',
      path: (id) => `/api/v1/chat/sessions/${id}`,
      body: { members: ['meg'] },
    },
    {
      name: 'delete',
      method: 'DELETE',
      path: (id) => `/api/v1/chat/sessions/${id}`,
      skip: (who) => who === 'owner' || who === 'admin',
    },
    { name: 'unpark', method: 'POST', path: (id) => `/api/v1/admin/sessions/${id}/unpark` },
  ];
}

async function send(who: Who, probe: Probe, sessionId: string) {
  const body =
    typeof probe.body === 'object' && probe.body !== null
      ? JSON.parse(JSON.stringify(probe.body).replace('{id}', sessionId))
      : probe.body;
  const response = await fetch(`${server.url}${probe.path(sessionId)}`, {
    method: probe.method,
    headers: {
      'parley-protocol-version': '1',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...principals[who],
      ...probe.headers,
    },
    body: body === undefined ? null : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // an attachment's bytes
  }
  return { status: response.status, body: parsed };
}

/** A tiny PNG (magic bytes and a header), enough for the attachment check. */
const png = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

describe('who sees a session', () => {
  it('answers every session route of a session one may not see exactly as a missing one', async () => {
    for (const visibility of ['private', 'tenant', 'room'] as const) {
      const { sessionId, requestId } = await waitingSession(visibility);
      const uploaded = await fetch(`${server.url}/api/v1/chat/sessions/${sessionId}/attachments`, {
        method: 'POST',
        headers: { 'content-type': 'image/png', ...principals.owner },
        body: png,
      });
      expect(uploaded.status).toBe(201);
      const attachmentId = ((await uploaded.json()) as { attachment_id: string }).attachment_id;
      const before = await server.db.query<{ n: number }>(
        `select (select count(*) from events where session_id = $1)::int
              + (select count(*) from messages where session_id = $1)::int
              + (select count(*) from turns where session_id = $1)::int
              + (select count(*) from commands where session_id = $1)::int as n`,
        [sessionId],
      );
      for (const who of Object.keys(principals) as Who[]) {
        const visible = sees[who].includes(visibility);
        for (const probe of probes(requestId, attachmentId)) {
          if (probe.skip?.(who)) continue;
          const where = `${who} ${probe.name} (${visibility})`;
          const answer = await send(who, probe, sessionId);
          const absent = await send(who, probe, missing);
          expect(answer.status, where).toBeLessThan(500);
          if (visible) {
            expect(answer, where).not.toEqual(absent);
          } else {
            expect(answer.status, where).toBe(404);
            expect(answer, where).toEqual(absent);
          }
        }
        const stream = await SseClient.open(server.url, sessionId, { headers: principals[who] });
        const absentStream = await SseClient.open(server.url, missing, {
          headers: principals[who],
        });
        if (visible) {
          expect(stream.status, `${who} events (${visibility})`).toBe(200);
          await stream.waitFor((client) => client.events.length > 0);
          stream.close();
        } else {
          expect(stream.status, `${who} events (${visibility})`).toBe(404);
          expect(stream.error).toEqual(absentStream.error);
        }
      }
      // Nothing any probe did changed the session's journal, transcript, turns or commands.
      const after = await server.db.query<{ n: number }>(
        `select (select count(*) from events where session_id = $1)::int
              + (select count(*) from messages where session_id = $1)::int
              + (select count(*) from turns where session_id = $1)::int
              + (select count(*) from commands where session_id = $1)::int as n`,
        [sessionId],
      );
      expect(after.rows[0]?.n).toBe(before.rows[0]?.n);
    }
  });

  it('lists only the sessions one may see', async () => {
    const made: Record<Visibility, string> = {
      private: (await call('owner', 'POST', '/api/v1/chat/sessions', { visibility: 'private' }))
        .body.session_id,
      tenant: (await call('owner', 'POST', '/api/v1/chat/sessions', {})).body.session_id,
      room: (
        await call('owner', 'POST', '/api/v1/chat/sessions', {
          visibility: 'room',
          members: ['meg', 'meg'],
        })
      ).body.session_id,
    };
    const room = await call('owner', 'GET', `/api/v1/chat/sessions/${made.room}`);
    expect(room.body.members).toEqual(['meg']);
    for (const who of Object.keys(principals) as Who[]) {
      const listed = new Set<string>();
      let cursor: string | null = null;
      do {
        const query: string = cursor === null ? '' : `&cursor=${cursor}`;
        const page = await call(who, 'GET', `/api/v1/chat/sessions?limit=2${query}`);
        expect(page.status).toBe(200);
        for (const item of page.body.items) listed.add(item.session_id);
        cursor = page.body.next_cursor;
      } while (cursor !== null);
      for (const visibility of ['private', 'tenant', 'room'] as const) {
        expect(listed.has(made[visibility]), `${who} lists the ${visibility} session`).toBe(
          sees[who].includes(visibility),
        );
      }
    }
  });

  it('lists in the inbox only the requests of sessions one may see', async () => {
    // `open` has no approver_roles: by roles anyone may answer; the session decides.
    const requests = {
      private: await waitingSession('private', 'open'),
      tenant: await waitingSession('tenant', 'open'),
      room: await waitingSession('room', 'open'),
    };
    const inbox = async (who: Who) =>
      new Set(
        (await call(who, 'GET', '/api/v1/inputs?state=pending&limit=200')).body.items.map(
          (item: { request_id: string }) => item.request_id,
        ),
      );
    const expected: Record<Who, Visibility[]> = { ...sees, approver: ['tenant'] };
    for (const who of Object.keys(principals) as Who[]) {
      const listed = await inbox(who);
      for (const visibility of ['private', 'tenant', 'room'] as const) {
        expect(listed.has(requests[visibility].requestId), `${who}: ${visibility}`).toBe(
          expected[who].includes(visibility),
        );
      }
    }
    // Bob cannot answer what he cannot see; meg answers the room's request.
    const hidden = await call(
      'other',
      'POST',
      `/api/v1/chat/sessions/${requests.room.sessionId}/inputs/${requests.room.requestId}`,
      { expected_sequence: requests.room.expected, approved: true },
    );
    expect(hidden.status).toBe(404);
    expect(hidden.body.error).toBe('input_not_found');
    const answered = await call(
      'member',
      'POST',
      `/api/v1/chat/sessions/${requests.room.sessionId}/inputs/${requests.room.requestId}`,
      { expected_sequence: requests.room.expected, approved: true },
    );
    expect(answered.status).toBe(200);
  });

  it("gives a new session its agent's visibility, or the one asked for; refuses a bad one", async () => {
    const secret = await call('owner', 'POST', '/api/v1/chat/sessions', { agent: 'secret' });
    expect(secret.body).toMatchObject({ owner: 'alice', visibility: 'private', members: [] });
    const shared = await call('owner', 'POST', '/api/v1/chat/sessions', {
      agent: 'secret',
      visibility: 'tenant',
    });
    expect(shared.body.visibility).toBe('tenant');
    // A session made by a first turn is its poster's, with its agent's visibility.
    const admitted = await call('other', 'POST', '/api/v1/chat/turns', {
      turn_id: 'first_of_bob',
      agent: 'secret',
      message: 'mine',
    });
    const bobs = await call('other', 'GET', `/api/v1/chat/sessions/${admitted.body.session_id}`);
    expect(bobs.body).toMatchObject({ owner: 'bob', visibility: 'private' });
    expect(
      (await call('owner', 'GET', `/api/v1/chat/sessions/${admitted.body.session_id}`)).status,
    ).toBe(404);
    const before = (await server.db.query('select 1 from sessions')).rowCount;
    for (const body of [
      { visibility: 'public' },
      { members: 'meg' },
      { members: [''] },
      { members: Array.from({ length: 201 }, (_, index) => `user${index}`) },
    ]) {
      const refused = await call('owner', 'POST', '/api/v1/chat/sessions', body);
      expect(refused.status).toBe(400);
      expect(refused.body.error).toBe('invalid_request');
    }
    expect((await server.db.query('select 1 from sessions')).rowCount).toBe(before);
  });

  it('lets the owner or an admin change who sees it, and no one else', async () => {
    const sessionId = (await call('owner', 'POST', '/api/v1/chat/sessions', {})).body
      .session_id as string;
    const path = `/api/v1/chat/sessions/${sessionId}`;
    expect((await call('other', 'GET', path)).status).toBe(200);
    const refused = await call('other', 'PATCH', path, { visibility: 'private' });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('forbidden');
    expect((await call('owner', 'PATCH', path, {})).status).toBe(400);
    expect((await call('owner', 'PATCH', path, { visibility: 'nobody' })).status).toBe(400);

    // Bob follows the session's stream; it becomes private: his stream ends.
    const stream = await SseClient.open(server.url, sessionId, { headers: principals.other });
    expect(stream.status).toBe(200);
    const changed = await call('owner', 'PATCH', path, { visibility: 'private' });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ visibility: 'private', owner: 'alice' });
    await until(
      () => stream.closed,
      (closed) => closed,
      "the end of bob's stream",
    );
    expect((await call('other', 'GET', path)).status).toBe(404);

    // A room with bob in it; the admin takes him out again.
    const room = await call('owner', 'PATCH', path, { visibility: 'room', members: ['bob'] });
    expect(room.body).toMatchObject({ visibility: 'room', members: ['bob'] });
    expect((await call('other', 'GET', path)).status).toBe(200);
    const byAdmin = await call('admin', 'PATCH', path, { members: [] });
    expect(byAdmin.status).toBe(200);
    expect(byAdmin.body).toMatchObject({ visibility: 'room', members: [] });
    expect((await call('other', 'GET', path)).status).toBe(404);
  });

  it('is reachable through the client SDK: create, change, delete', async () => {
    const client = new ParleyClient({ baseUrl: server.url, apiKey: keys.K_ALICE });
    const created = await client.createSession({ visibility: 'room', members: ['meg'] });
    expect(created).toMatchObject({ owner: 'alice', visibility: 'room', members: ['meg'] });
    const changed = await client.updateSession(created.session_id, { visibility: 'private' });
    expect(changed).toMatchObject({ visibility: 'private', members: ['meg'] });
    expect(
      (await call('member', 'GET', `/api/v1/chat/sessions/${created.session_id}`)).status,
    ).toBe(404);
    await expect(client.deleteSession(created.session_id)).resolves.toBeUndefined();
    await expect(client.deleteSession(created.session_id)).rejects.toMatchObject({
      code: 'session_not_found',
      status: 404,
    });
  });

  it('keeps personal sessions private to their user', async () => {
    const mine = await call('owner', 'POST', '/api/v1/agents/default/personal');
    expect(mine.status).toBe(201);
    expect(mine.body).toMatchObject({ owner: 'alice', visibility: 'private' });
    const path = `/api/v1/chat/sessions/${mine.body.session_id}`;
    const hidden = await call('other', 'GET', path);
    const absent = await call('other', 'GET', `/api/v1/chat/sessions/${missing}`);
    expect(hidden).toMatchObject({ status: 404, body: absent.body });
    const listed = await call('other', 'GET', '/api/v1/chat/sessions?limit=200');
    expect(listed.body.items.map((item: any) => item.session_id)).not.toContain(
      mine.body.session_id,
    );
    expect((await call('admin', 'GET', path)).status).toBe(200);
    // Bob's own personal session is his, not alice's.
    const his = await call('other', 'POST', '/api/v1/agents/default/personal');
    expect(his.body.session_id).not.toBe(mine.body.session_id);
    expect(
      (await call('owner', 'GET', `/api/v1/chat/sessions/${his.body.session_id}`)).status,
    ).toBe(404);
  });

  it('shows an execution only to those who may see its session', async () => {
    const dispatched = await call('owner', 'POST', '/api/v1/missions/report/executions', {
      execution_id: 'report_1',
    });
    expect(dispatched.status).toBe(202);
    const session = await call(
      'owner',
      'GET',
      `/api/v1/chat/sessions/${dispatched.body.session_id}`,
    );
    expect(session.body).toMatchObject({ owner: 'alice', visibility: 'private' });
    for (const who of Object.keys(principals) as Who[]) {
      const visible = sees[who].includes('private');
      const detail = await call(who, 'GET', '/api/v1/executions/report_1');
      const absent = await call(who, 'GET', '/api/v1/executions/no_such_execution');
      const listed = await call(who, 'GET', '/api/v1/executions?limit=200');
      const cancel = await call(who, 'POST', '/api/v1/executions/report_1/cancel', {
        command_id: `probe_${who}`,
      });
      const cancelAbsent = await call(who, 'POST', '/api/v1/executions/no_such_execution/cancel', {
        command_id: `probe_${who}`,
      });
      const ids = (listed.body.items ?? []).map((item: any) => item.execution_id);
      if (visible) {
        expect(detail.status, who).toBe(200);
        expect(ids, who).toContain('report_1');
      } else {
        // Status and body as for a missing one (the headers differ by their Date alone).
        const answer = ({ status, body }: { status: number; body: unknown }) => ({ status, body });
        expect(answer(detail), who).toEqual(answer(absent));
        expect(detail.status, who).toBe(404);
        expect(ids, who).not.toContain('report_1');
        expect(answer(cancel), who).toEqual(answer(cancelAbsent));
      }
    }
  });
});
