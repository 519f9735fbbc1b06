import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readEvents } from '../src/store/readEvents.js';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// An approval or question inside an execution (issue 10): the execution is `interrupted`,
// and the request goes where the mission's `interrupt_to` says — a user, a role (through
// the approvals inbox, most urgent first), or another agent, which answers in its own
// session and is journaled as the actor. Tenant acme: carol dispatches, alice and the ops
// role receive; tenant globex sees nothing of it.
let server: TestServer;
let counter = 0;
const keys = {
  K_ALICE: 'alice-key',
  K_BOB: 'bob-key',
  K_CAROL: 'carol-key',
  K_GLOBEX: 'globex-key',
};
const alice = { authorization: 'Bearer alice-key' };
const bob = { authorization: 'Bearer bob-key' };
const carol = { authorization: 'Bearer carol-key' };
const globex = { authorization: 'Bearer globex-key' };
const calculate = '/tool calculator {"expression": "6*7"}';

beforeAll(async () => {
  server = await startTestServer(
    {
      runtime: { execution_recheck_ms: 300 },
      auth: {
        keys: [
          { key_env: 'K_ALICE', tenant: 'acme', user: 'alice', roles: [] },
          { key_env: 'K_BOB', tenant: 'acme', user: 'bob', roles: ['ops'] },
          { key_env: 'K_CAROL', tenant: 'acme', user: 'carol', roles: [] },
          { key_env: 'K_GLOBEX', tenant: 'globex', user: 'gina', roles: ['ops', 'admin'] },
        ],
      },
      agents: {
        default: { tools: { calculator: 'approve', ask_user: 'allow' } },
        approver: { instructions: 'You review requests.\n/answer APPROVE it is arithmetic' },
        refuser: { instructions: 'You review requests.\n/answer REJECT not today' },
        oracle: { instructions: 'You answer questions.\n/answer blue' },
      },
      missions: {
        own: { prompt: calculate },
        to_alice: { prompt: calculate, interrupt_to: 'user:alice', priority: 'low' },
        to_ops: { prompt: calculate, interrupt_to: 'role:ops', priority: 'urgent' },
        approved: { prompt: calculate, interrupt_to: 'agent:approver' },
        refused: { prompt: calculate, interrupt_to: 'agent:refuser' },
        asked: {
          prompt: '/tool ask_user {"question": "Which colour?"}',
          interrupt_to: 'agent:oracle',
        },
      },
    },
    keys,
  );
});
afterAll(async () => {
  await server.close();
});

async function dispatch(mission: string, who: Record<string, string>): Promise<any> {
  const answer = await request(
    server.url,
    'POST',
    `/api/v1/missions/${mission}/executions`,
    { execution_id: `i_${counter++}` },
    who,
  );
  expect(answer.status).toBe(202);
  return answer.body;
}

async function untilStatus(id: string, who: Record<string, string>, statuses: string[]) {
  return (
    await until(
      () => request(server.url, 'GET', `/api/v1/executions/${id}`, undefined, who),
      (response) => statuses.includes(response.body.status),
      `execution ${id} to be ${statuses.join(' or ')}`,
    )
  ).body;
}

const inbox = async (who: Record<string, string>) =>
  (await request(server.url, 'GET', '/api/v1/inputs?state=pending', undefined, who)).body
    .items as any[];

describe('interruptions routed to people', () => {
  it('goes to the execution user by default, to a user, or to a role; urgent first', async () => {
    const own = await dispatch('own', carol);
    const toAlice = await dispatch('to_alice', carol);
    const toOps = await dispatch('to_ops', carol);
    for (const execution of [own, toAlice, toOps]) {
      const waiting = await untilStatus(execution.execution_id, carol, ['interrupted']);
      expect(waiting.status).toBe('interrupted');
    }
    const ids = (items: any[]) => items.map((item) => item.execution_id);
    expect(ids(await inbox(carol))).toEqual([own.execution_id]);
    expect(ids(await inbox(alice))).toEqual([toAlice.execution_id]);
    expect(ids(await inbox(bob))).toEqual([toOps.execution_id]);
    expect(await inbox(globex)).toEqual([]);
    const item = (await inbox(bob))[0];
    expect(item).toMatchObject({
      priority: 'urgent',
      interrupt_to: 'role:ops',
      tool: 'calculator',
    });

    // Only the person (or role) it is routed to may answer: carol may not answer ops'.
    const answer = (who: Record<string, string>, entry: any) =>
      request(
        server.url,
        'POST',
        `/api/v1/chat/sessions/${entry.session_id}/inputs/${entry.request_id}`,
        { expected_sequence: entry.expected_sequence, approved: true },
        who,
      );
    expect((await answer(carol, item)).status).toBe(403);
    expect((await answer(globex, item)).status).toBe(404);
    expect((await answer(bob, item)).status).toBe(200);
    const done = await untilStatus(toOps.execution_id, carol, ['success', 'error']);
    expect(done.result.content).toBe('Tool calculator returned: {"expression":"6*7","result":42}');

    const aliceItem = (await inbox(alice))[0];
    expect(aliceItem.priority).toBe('low');
    expect((await answer(alice, aliceItem)).status).toBe(200);
    const ownItem = (await inbox(carol))[0];
    expect((await answer(carol, ownItem)).status).toBe(200);
    await untilStatus(own.execution_id, carol, ['success']);
    await untilStatus(toAlice.execution_id, carol, ['success']);
  });

  it('pages the inbox by priority, then age', async () => {
    // bob's own (normal, routed to him as its user) is older than the urgent one for ops.
    const normal = await dispatch('own', bob);
    await untilStatus(normal.execution_id, bob, ['interrupted']);
    const urgent = await dispatch('to_ops', carol);
    await untilStatus(urgent.execution_id, bob, ['interrupted']);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await request(
        server.url,
        'GET',
        `/api/v1/inputs?state=pending&limit=1${cursor ? `&cursor=${cursor}` : ''}`,
        undefined,
        bob,
      );
      expect(page.status).toBe(200);
      seen.push(...page.body.items.map((item: any) => item.execution_id));
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(seen).toEqual([urgent.execution_id, normal.execution_id]);
    for (const execution of [normal, urgent]) {
      await request(
        server.url,
        'POST',
        `/api/v1/executions/${execution.execution_id}/cancel`,
        { command_id: `c_${execution.execution_id}` },
        bob,
      );
      await untilStatus(execution.execution_id, bob, ['cancelled']);
    }
  });
});

describe('interruptions routed to an agent', () => {
  it('is approved by that agent in its own session, journaled with the agent as actor', async () => {
    const execution = await dispatch('approved', carol);
    const done = await untilStatus(execution.execution_id, carol, ['success', 'error']);
    expect(done.result.content).toBe('Tool calculator returned: {"expression":"6*7","result":42}');
    const events = await readEvents(server.db, done.session_id, 0, 1000);
    expect(events.find((event) => event.type === 'input_resolved')).toMatchObject({
      approved: true,
      actor: { user: 'agent:approver', tenant: 'acme' },
    });
    // Never in a person's inbox.
    expect((await inbox(carol)).map((item) => item.execution_id)).not.toContain(
      execution.execution_id,
    );
    // The agent answered in a session of its own, through an ordinary turn.
    const sessions = await server.db.query<{ session_id: string; agent: string }>(
      `select s.session_id, s.agent from sessions s join turns t on t.session_id = s.session_id
        where t.turn_id like $1`,
      [`exec.${execution.execution_id}.req_%`],
    );
    expect(sessions.rows).toHaveLength(1);
    expect(sessions.rows[0]?.agent).toBe('approver');
    const asked = await readEvents(server.db, sessions.rows[0]?.session_id as string, 0, 100);
    expect(asked.find((event) => event.type === 'message')?.message.content).toContain(
      'asks for your approval to call the tool calculator',
    );
  });

  it('is rejected when the agent does not approve', async () => {
    const execution = await dispatch('refused', carol);
    const done = await untilStatus(execution.execution_id, carol, ['success', 'error']);
    expect(done.result.content).toBe(
      'Tool calculator failed: rejected by agent:refuser: REJECT not today',
    );
  });

  it('has a question answered by the agent', async () => {
    const execution = await dispatch('asked', carol);
    const done = await untilStatus(execution.execution_id, carol, ['success', 'error']);
    expect(done.result.content).toBe('Tool ask_user returned: {"answer":"blue"}');
  });
});
