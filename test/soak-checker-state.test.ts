import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkDatabase, type Category } from '../scripts/soak/checker/index.js';
import { Ledger, type TurnKind } from '../scripts/soak/ledger.js';
import { stateAgent, stateConfig } from '../scripts/soak/state.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// The soak's state rules (scripts/soak/checker/state.ts) on a real journal: a session of
// the soak's `stateful` agent gets two AG-UI runs, each carrying a state, the second
// having its model change it again (`update_state`). The checker finds nothing; then the
// session's data, what the client was told, and the journal's changes are broken in turn,
// and the checker must name each. Every change is undone afterwards.

let server: TestServer;
let sessionId: string;
const ledger = new Ledger();

/** An AG-UI run on the session carrying `state`, read to its `RUN_FINISHED`. */
async function run(runId: string, kind: TurnKind, message: string, state: { count: number }) {
  const response = await fetch(`${server.url}/ag-ui/${stateAgent}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({
      threadId: sessionId,
      runId,
      messages: [{ id: `${runId}_m`, role: 'user', content: message }],
      state: { ...state, by: runId },
    }),
  });
  expect(response.status).toBe(200);
  expect(await response.text()).toContain('"type":"RUN_FINISHED"');
  ledger.acknowledge({ turnId: runId, sessionId, kind, message, sequence: null });
  ledger.states.push({ sessionId, turnId: runId, data: { ...state, by: runId } });
}

beforeAll(async () => {
  server = await startTestServer({
    agents: { [stateAgent]: { model: 'demo/echo', state: stateConfig } },
  });
  const made = await request(server.url, 'POST', '/api/v1/chat/sessions', { agent: stateAgent });
  expect(made.status).toBe(201);
  sessionId = made.body.session_id;
  await run('state_1', 'plain', 'state_1 hello there', { count: 1 });
  // Taken before the turn: a busy session (its last turn not yet let go) refuses it, retried.
  const message = '/tool update_state {"set": {"count": 7, "by": "state_2"}}';
  for (let attempt = 0; ; attempt++) {
    try {
      await run('state_2', 'state', message, { count: 2 });
      break;
    } catch (error) {
      if (attempt > 20) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}, 60_000);

afterAll(async () => {
  await server?.close();
});

async function expectFound(category: Category, rule: string, told = ledger): Promise<void> {
  const found = (await checkDatabase(server.db, told)).findings.violations;
  expect(
    found.some((violation) => violation.category === category && violation.check === rule),
    `expected ${category}/${rule} among ${JSON.stringify(found)}`,
  ).toBe(true);
}

/** Runs `body` with one state_changed event's payload changed, then puts it back. */
async function withChange(by: string, change: (payload: any) => any, body: () => Promise<void>) {
  const found = await server.db.query<{ sequence: number; payload: any }>(
    `select sequence, payload from events
      where session_id = $1 and type = 'state_changed' and payload ->> 'by' = $2
      order by sequence desc limit 1`,
    [sessionId, by],
  );
  const { sequence, payload } = found.rows[0] as { sequence: number; payload: any };
  const set = (value: unknown) =>
    server.db.query('update events set payload = $3 where session_id = $1 and sequence = $2', [
      sessionId,
      sequence,
      JSON.stringify(value),
    ]);
  await set(change(structuredClone(payload)));
  try {
    await body();
  } finally {
    await set(payload);
  }
}

describe('the state rules', () => {
  it('find nothing: both states taken with their runs, the model’s change committed last', async () => {
    const result = await checkDatabase(server.db, ledger);
    expect(result.findings.violations).toEqual([]);
    expect(result.stateChanges).toBe(1);
    const projection = await request(server.url, 'GET', `/api/v1/chat/sessions/${sessionId}`);
    expect(projection.body.data).toEqual({ count: 7, by: 'state_2' });
  });

  it("a session's data that is not its journal's last change is a mismatch", async () => {
    const set = (data: unknown) =>
      server.db.query('update sessions set data = $2 where session_id = $1', [
        sessionId,
        JSON.stringify(data),
      ]);
    await set({ count: 2, by: 'state_2' });
    try {
      await expectFound('mismatch', "a session's state is its journal's");
    } finally {
      await set({ count: 7, by: 'state_2' });
    }
  });

  it('an acknowledged state not journaled is lost; journaled twice, doubled', async () => {
    const rule = 'an acknowledged state is journaled with its run';
    const told = new Ledger();
    told.states.push({ sessionId, turnId: 'state_1', data: { count: 5, by: 'state_1' } });
    await expectFound('lost', rule, told);

    const rows = await server.db.query<{ last: number }>(
      'select max(sequence)::int as last from events where session_id = $1',
      [sessionId],
    );
    const sequence = (rows.rows[0]?.last ?? 0) + 1;
    const again = { data: { count: 1, by: 'state_1' }, by: 'user', actor: { user: 'x' } };
    await server.db.query(
      `insert into events (session_id, sequence, type, turn_id, payload)
       values ($1, $2, 'state_changed', 'state_1', $3)`,
      [sessionId, sequence, JSON.stringify(again)],
    );
    try {
      await expectFound('doubled', rule);
    } finally {
      await server.db.query('delete from events where session_id = $1 and sequence = $2', [
        sessionId,
        sequence,
      ]);
    }
  });

  it("a state turn done without its model's change is lost", async () => {
    await withChange(
      'tool',
      (payload) => ({ ...payload, by: 'option' }),
      () => expectFound('lost', "a turn's state change is committed with it"),
    );
  });
});
