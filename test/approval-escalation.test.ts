import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nudgeDueRequests } from '../src/store/nudgeDueRequests.js';
import { readEvents } from '../src/store/readEvents.js';
import { checkJournalInvariants } from './support/invariants.js';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// Escalation and reminders (docs/governance.md): a waiting approval's chain adds each
// step's audience once and in order, then its reminder comes before the deadline; the
// escalated audience sees the session, finds the request in its inbox and may answer it,
// while a principal the chain never reached may not.

let server: TestServer;
let counter = 0;
const keys = { K_ANN: 'ann-key', K_LEE: 'lee-key', K_BOSS: 'boss-key', K_CY: 'cy-key' };
const ann = { authorization: 'Bearer ann-key' };
const lee = { authorization: 'Bearer lee-key' };
const boss = { authorization: 'Bearer boss-key' };
const cy = { authorization: 'Bearer cy-key' };

beforeAll(async () => {
  server = await startTestServer(
    {
      auth: {
        keys: [
          { key_env: 'K_ANN', tenant: 'acme', user: 'ann', roles: ['approver'] },
          { key_env: 'K_LEE', tenant: 'acme', user: 'lee', roles: ['lead'] },
          { key_env: 'K_BOSS', tenant: 'acme', user: 'boss', roles: [] },
          { key_env: 'K_CY', tenant: 'acme', user: 'cy', roles: [] },
        ],
      },
      agents: {
        default: { model: 'demo/echo' },
        escalating: {
          model: 'demo/echo',
          visibility: 'private',
          approver_roles: ['approver'],
          approval_timeout_ms: 3_600_000,
          escalate: [
            { after_ms: 100, to: 'role:lead' },
            { after_ms: 250, to: 'user:boss' },
          ],
          // An hour's deadline: the reminder comes 400 ms after the request.
          remind_before_ms: 3_599_600,
          tools: { calculator: 'approve' },
        },
      },
    },
    keys,
  );
});
afterAll(async () => {
  await checkJournalInvariants(server.db);
  await server.close();
});

const journal = async (sessionId: string): Promise<any[]> =>
  readEvents(server.db, sessionId, 0, 100_000);
const ofType = (events: any[], type: string) => events.filter((event) => event.type === type);

async function waitingApproval(): Promise<{ sessionId: string; required: any }> {
  const admitted = await request(
    server.url,
    'POST',
    '/api/v1/chat/turns',
    {
      turn_id: `escalation_${counter++}`,
      agent: 'escalating',
      message: '/tool calculator {"expression": "6*7"}',
    },
    ann,
  );
  expect(admitted.status).toBe(202);
  const sessionId = admitted.body.session_id as string;
  const events = await until(
    () => journal(sessionId),
    (found) => ofType(found, 'input_required').length > 0,
    'the approval request',
  );
  return { sessionId, required: ofType(events, 'input_required')[0] };
}

describe('approval escalation and reminders', () => {
  it('journals each step and the reminder once, in order, and widens who may answer', async () => {
    const { sessionId, required } = await waitingApproval();
    const events = await until(
      () => journal(sessionId),
      (found) => ofType(found, 'input_reminder').length > 0,
      'the reminder',
    );
    const nudges = events.filter((event) =>
      ['input_escalated', 'input_reminder'].includes(event.type),
    );
    expect(nudges).toEqual([
      expect.objectContaining({
        type: 'input_escalated',
        request_id: required.request_id,
        turn_id: required.turn_id,
        step: 1,
        to: 'role:lead',
      }),
      expect.objectContaining({ type: 'input_escalated', step: 2, to: 'user:boss' }),
      expect.objectContaining({
        type: 'input_reminder',
        request_id: required.request_id,
        deadline_at: required.deadline_at,
      }),
    ]);
    // Nothing is left to take: another round (another worker's timer) takes nothing.
    expect(await nudgeDueRequests(server.db, { limit: 10 })).toBe(0);

    // The lead and the boss see the session and find the request in their inbox; cy,
    // whom the chain never reached, sees neither.
    for (const who of [lee, boss]) {
      const projection = await request(
        server.url,
        'GET',
        `/api/v1/chat/sessions/${sessionId}`,
        undefined,
        who,
      );
      expect(projection.status).toBe(200);
      expect(projection.body.pending_input).toMatchObject({
        request_id: required.request_id,
        escalated_to: ['role:lead', 'user:boss'],
      });
      const inbox = await request(
        server.url,
        'GET',
        '/api/v1/inputs?state=pending',
        undefined,
        who,
      );
      expect(inbox.body).toMatchObject({ next_cursor: null });
      expect(inbox.body.items).toEqual([
        expect.objectContaining({
          request_id: required.request_id,
          escalated_to: ['role:lead', 'user:boss'],
          escalation_step: 2,
        }),
      ]);
    }
    const hidden = await request(
      server.url,
      'GET',
      `/api/v1/chat/sessions/${sessionId}`,
      undefined,
      cy,
    );
    expect(hidden.status).toBe(404);
    const cyInbox = await request(server.url, 'GET', '/api/v1/inputs?state=pending', undefined, cy);
    expect(cyInbox.body).toEqual({ items: [], next_cursor: null });

    // The lead answers; the turn resumes and the call runs once.
    const answered = await request(
      server.url,
      'POST',
      `/api/v1/chat/sessions/${sessionId}/inputs/${required.request_id}`,
      {
        expected_sequence: required.sequence,
        approved: true,
        arguments_digest: required.arguments_digest,
      },
      lee,
    );
    expect(answered.status).toBe(200);
    const done = await until(
      () => journal(sessionId),
      (found) => ofType(found, 'done').length > 0,
      'the turn to finish',
    );
    expect(ofType(done, 'input_resolved')).toEqual([
      expect.objectContaining({ approved: true, actor: { user: 'lee', tenant: 'acme' } }),
    ]);
    expect(ofType(done, 'tool_result')).toEqual([expect.objectContaining({ ok: true })]);

    // Answered, the request no longer widens anything: the lead no longer sees the session.
    const after = await request(
      server.url,
      'GET',
      `/api/v1/chat/sessions/${sessionId}`,
      undefined,
      lee,
    );
    expect(after.status).toBe(404);
  });

  it('refuses an answer from a principal the chain has not reached', async () => {
    const { sessionId, required } = await waitingApproval();
    // Straight away the chain's first step may not have come yet; cy is never in it.
    const refused = await request(
      server.url,
      'POST',
      `/api/v1/chat/sessions/${sessionId}/inputs/${required.request_id}`,
      { expected_sequence: required.sequence, approved: true },
      cy,
    );
    expect(refused.status).toBe(404);
    await until(
      () => journal(sessionId),
      (found) => ofType(found, 'input_reminder').length > 0,
      'the reminder',
    );
    // After every step: cy still may not, and nothing was written for the attempt.
    const still = await request(
      server.url,
      'POST',
      `/api/v1/chat/sessions/${sessionId}/inputs/${required.request_id}`,
      { expected_sequence: required.sequence, approved: true },
      cy,
    );
    expect(still.status).toBe(404);
    expect(ofType(await journal(sessionId), 'input_resolved')).toEqual([]);
    // The first approver keeps the right to answer.
    const answered = await request(
      server.url,
      'POST',
      `/api/v1/chat/sessions/${sessionId}/inputs/${required.request_id}`,
      { expected_sequence: required.sequence, approved: false },
      ann,
    );
    expect(answered.status).toBe(200);
  });
});
