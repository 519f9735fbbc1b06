import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProcess, type Running } from '../src/cli/start.js';
import { createLogger } from '../src/log.js';
import { readEvents } from '../src/store/readEvents.js';
import { testConfig } from './support/config.js';
import { freshStorage } from './support/db.js';
import { checkJournalInvariants } from './support/invariants.js';
import { until } from './support/poll.js';
import { request } from './support/server.js';

// Definitions pinned per run: a turn runs with the agent revision it started with (an
// admin's edit while it waits for a person applies from the next turn), `turn_started`
// says which, and an admission may name the revision it expects.
const keys = { K_ALICE: 'alice-key' };
const alice = { authorization: 'Bearer alice-key' };
let running: Running;
let url: string;
let drop: () => Promise<void>;
let counter = 0;

beforeAll(async () => {
  const fresh = await freshStorage();
  drop = fresh.drop;
  const config = testConfig(
    fresh.storage,
    {
      auth: { keys: [{ key_env: 'K_ALICE', tenant: 'acme', user: 'alice', roles: ['admin'] }] },
      agents: {
        default: {},
        pinned: {
          model: 'demo/echo',
          instructions: '/sign v1',
          tools: { calculator: 'approve' },
        },
      },
      missions: { report: { prompt: 'Report.' } },
    },
    keys,
  );
  running = await startProcess(
    config,
    { api: true, worker: true },
    createLogger({ level: 'silent' }),
    {
      env: { ...process.env, ...keys },
    },
  );
  url = running.url as string;
});
afterAll(async () => {
  await checkJournalInvariants(running.db);
  await running.stop();
  await drop();
});

const journal = (sessionId: string): Promise<any[]> =>
  readEvents(running.db, sessionId, 0, 100_000) as Promise<any[]>;
const count = (events: any[], type: string) => events.filter((event) => event.type === type).length;
const waitFor = (sessionId: string, ok: (events: any[]) => boolean, what: string) =>
  until(() => journal(sessionId), ok, what);

async function admit(body: Record<string, unknown>) {
  return request(
    url,
    'POST',
    '/api/v1/chat/turns',
    { turn_id: `pin_${counter++}`, ...body },
    alice,
  );
}

/** The agent's current revision, as the listing shows it. */
async function revisionOf(name: string): Promise<number> {
  const listed = await request(url, 'GET', '/api/v1/agents', undefined, alice);
  const revision = listed.body.items.find((item: any) => item.name === name).revision;
  expect(typeof revision).toBe('number');
  return revision as number;
}

/** Edits the agent's instructions (the rest of its definition as the admin reads it). */
async function editInstructions(name: string, instructions: string): Promise<number> {
  const before = await revisionOf(name);
  const current = await request(url, 'GET', `/api/v1/agents/${name}`, undefined, alice);
  expect(current.status).toBe(200);
  const put = await request(
    url,
    'PUT',
    `/api/v1/agents/${name}`,
    { ...current.body.definition, instructions },
    alice,
  );
  expect(put.status).toBe(200);
  const after = await revisionOf(name);
  expect(after).toBeGreaterThan(before);
  return after;
}

/** The revision of the mission the tenant sees now, as the directory records it. */
async function missionRevision(name: string): Promise<number> {
  const found = await running.db.query<{ revision: number }>(
    `select revision from definitions where kind = 'mission' and tenant in ('acme', '')
        and name = $1 order by tenant desc limit 1`,
    [name],
  );
  return found.rows[0]?.revision as number;
}

/** Admits a calculator call and waits until it asks for approval. */
async function waitingTurn(): Promise<{ sessionId: string; turnId: string; required: any }> {
  const admitted = await admit({
    agent: 'pinned',
    message: '/tool calculator {"expression": "2+3"}',
  });
  expect(admitted.status).toBe(202);
  const sessionId = admitted.body.session_id as string;
  const events = await waitFor(
    sessionId,
    (list) => count(list, 'input_required') === 1,
    'approval',
  );
  return {
    sessionId,
    turnId: admitted.body.turn_id as string,
    required: events.find((event) => event.type === 'input_required'),
  };
}

const approve = (sessionId: string, required: any) =>
  request(
    url,
    'POST',
    `/api/v1/chat/sessions/${sessionId}/inputs/${required.request_id}`,
    { expected_sequence: required.sequence, approved: true },
    alice,
  );

describe('definitions pinned per run', () => {
  it('an edit while a turn waits for approval applies from the next turn, not to its later steps', async () => {
    const before = await revisionOf('pinned');
    const { sessionId, turnId, required } = await waitingTurn();
    const edited = await editInstructions('pinned', '/sign v2');
    expect(await revisionOf('pinned')).toBe(edited);

    expect((await approve(sessionId, required)).status).toBe(200);
    let events = await waitFor(sessionId, (list) => count(list, 'done') === 1, 'the reply');
    const started = events.filter((event) => event.type === 'turn_started');
    // The start, and the resume after the approval: both with the revision it started with.
    expect(started.length).toBeGreaterThanOrEqual(2);
    for (const event of started) {
      expect(event).toMatchObject({ turn_id: turnId, agent: 'pinned', agent_revision: before });
      expect(event).not.toHaveProperty('unpinned_revision');
    }
    const done = events.find((event) => event.type === 'done');
    expect(done.final_message.content).toContain('Tool calculator returned');
    expect(done.final_message.content).toContain('(signed: v1)');
    expect(done.final_message.content).not.toContain('v2');

    // The next turn of the same session uses the edit.
    const next = await admit({ session_id: sessionId, message: 'hello again' });
    expect(next.status).toBe(202);
    events = await waitFor(sessionId, (list) => count(list, 'done') === 2, 'the second reply');
    const secondStart = events.filter((event) => event.type === 'turn_started').at(-1);
    expect(secondStart).toMatchObject({
      turn_id: next.body.turn_id,
      agent: 'pinned',
      agent_revision: edited,
    });
    const second = events.filter((event) => event.type === 'done').at(-1);
    expect(second.final_message.content).toBe('You said: hello again\n(signed: v2)');
  });

  it('a recorded revision that can no longer be loaded: the turn continues with the current one, journaled', async () => {
    const { sessionId, required } = await waitingTurn();
    const recorded = (await journal(sessionId)).find((event) => event.type === 'turn_started')
      .agent_revision as number;
    const edited = await editInstructions('pinned', '/sign v3');
    await running.db.query('delete from definition_history where revision = $1', [recorded]);

    expect((await approve(sessionId, required)).status).toBe(200);
    const events = await waitFor(sessionId, (list) => count(list, 'done') === 1, 'the reply');
    const resumed = events.filter((event) => event.type === 'turn_started').at(-1);
    expect(resumed).toMatchObject({ agent_revision: edited, unpinned_revision: recorded });
    expect(events.find((event) => event.type === 'done').final_message.content).toContain(
      '(signed: v3)',
    );
  });

  it('agent_revision in an admission: part of the fingerprint, and it must be the current one', async () => {
    const revision = await revisionOf('pinned');
    const turnId = `pin_fp_${counter++}`;
    const body = { turn_id: turnId, agent: 'pinned', message: 'hello', agent_revision: revision };
    const post = (extra: Record<string, unknown>) =>
      request(url, 'POST', '/api/v1/chat/turns', { ...body, ...extra }, alice);

    const first = await post({});
    expect(first.status).toBe(202);
    const sessionId = first.body.session_id as string;
    // A retry of the same request is the same admission.
    const retry = await post({});
    expect(retry.status).toBe(202);
    expect(retry.body).toEqual(first.body);
    // The same turn identity with another revision, or none, is another request.
    for (const other of [{ agent_revision: revision + 1000 }, { agent_revision: undefined }]) {
      const conflict = await post(other);
      expect(conflict.status).toBe(409);
      expect(conflict.body.error).toBe('turn_conflict');
    }
    const events = await waitFor(sessionId, (list) => count(list, 'done') === 1, 'the reply');
    expect(events.find((event) => event.type === 'turn_started')).toMatchObject({
      turn_id: turnId,
      agent_revision: revision,
    });

    // A revision that is not the current one is refused, and nothing is written.
    const stale = await request(
      url,
      'POST',
      '/api/v1/chat/turns',
      {
        turn_id: `pin_fp_${counter++}`,
        session_id: sessionId,
        message: 'stale',
        agent_revision: revision - 1,
      },
      alice,
    );
    expect(stale.status).toBe(409);
    expect(stale.body).toMatchObject({
      error: 'agent_revision_mismatch',
      agent: 'pinned',
      agent_revision: revision,
    });
    expect((await journal(sessionId)).length).toBe(events.length);
  });

  it('an execution records the mission revision its settings were taken from', async () => {
    const dispatch = () =>
      request(
        url,
        'POST',
        '/api/v1/missions/report/executions',
        { execution_id: `pin_exec_${counter++}` },
        alice,
      );
    const recorded = async (executionId: string) =>
      (
        await running.db.query<{ mission_revision: number | null }>(
          'select mission_revision from executions where tenant = $1 and execution_id = $2',
          ['acme', executionId],
        )
      ).rows[0]?.mission_revision;
    const view = await request(url, 'GET', '/api/v1/missions/report', undefined, alice);
    expect(view.status).toBe(200);
    const shipped = await missionRevision('report');
    const first = await dispatch();
    expect(first.status).toBe(202);
    expect(await recorded(first.body.execution_id)).toBe(shipped);

    const put = await request(
      url,
      'PUT',
      '/api/v1/missions/report',
      { ...view.body.definition, prompt: 'Report again.' },
      alice,
    );
    expect(put.status).toBe(200);
    const edited = await missionRevision('report');
    expect(edited).toBeGreaterThan(shipped);
    const second = await dispatch();
    expect(second.status).toBe(202);
    expect(await recorded(second.body.execution_id)).toBe(edited);
    expect(await recorded(first.body.execution_id)).toBe(shipped);
  });
});
