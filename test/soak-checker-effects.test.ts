import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkDatabase, type Category } from '../scripts/soak/checker/index.js';
import {
  EffectLedger,
  effectToolsConfig,
  effectTools,
  startEffectServer,
  type EffectServer,
} from '../scripts/soak/effects.js';
import { Ledger } from '../scripts/soak/ledger.js';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';
import { journalOf } from './support/journal.js';

// The soak's effect rules (scripts/soak/checker/effects.ts) on a real journal: a server
// runs one turn whose single model step calls the soak's MCP effect tools three times
// (two non-idempotent `charge`, one idempotent `touch`); the checker finds nothing. Then
// the external ledger or the journal is changed to break each rule, and the checker must
// name it. Every change of the database is undone afterwards.

let server: TestServer;
let effectServer: EffectServer;
const effects = new EffectLedger();
const ledger = new Ledger();
let sessionId = '';
const turnId = 'effects_1';
const message = [
  `/tool ${effectTools.charge.exposed} {"key": "${turnId}.1"}`,
  `/tool ${effectTools.touch.exposed} {"key": "${turnId}.2"}`,
  `/tool ${effectTools.charge.exposed} {"key": "${turnId}.3"}`,
].join('\n');

async function events(): Promise<any[]> {
  return journalOf(server.db, sessionId);
}

beforeAll(async () => {
  effectServer = await startEffectServer(effects);
  const { mcpServers, agentTools } = effectToolsConfig(effectServer.url);
  server = await startTestServer({
    mcp_servers: mcpServers,
    agents: { default: { model: 'demo/echo', tools: agentTools } },
  });
  const answer = await request(server.url, 'POST', '/api/v1/chat/turns', {
    turn_id: turnId,
    message,
  });
  expect(answer.status).toBe(202);
  sessionId = answer.body.session_id;
  ledger.acknowledge({
    turnId,
    sessionId,
    kind: 'effects',
    message,
    sequence: answer.body.sequence,
  });
  await until(
    () => events(),
    (rows) => rows.some((row) => row.type === 'done'),
    'the end of the effects turn',
  );
}, 120_000);

afterAll(async () => {
  await server?.close();
  await effectServer?.close();
});

/** A copy of the external ledger, changed by `change`. */
function ledgerWith(change: (copy: EffectLedger) => void): EffectLedger {
  const copy = new EffectLedger();
  for (const [key, effect] of effects.effects) copy.effects.set(key, { ...effect });
  change(copy);
  return copy;
}

async function check(from: EffectLedger = effects) {
  return checkDatabase(server.db, ledger, { effects: from });
}

async function expectFound(category: Category, rule: string, from?: EffectLedger) {
  const found = (await check(from)).findings.violations;
  expect(
    found.some((violation) => violation.category === category && violation.check === rule),
    `expected ${category}/${rule} among ${JSON.stringify(found)}`,
  ).toBe(true);
}

/** Replaces the payload of the result of `key`'s call for the time of `body`. */
async function withResult(key: string, payload: (original: any) => any, body: () => Promise<void>) {
  const rows = await events();
  const call = rows.find((row) => row.type === 'tool_call' && row.payload.arguments?.key === key);
  const result = rows.find(
    (row) => row.type === 'tool_result' && row.payload.call_id === call.payload.call_id,
  );
  const update = (value: unknown) =>
    server.db.query('update events set payload = $3 where session_id = $1 and sequence = $2', [
      sessionId,
      result.sequence,
      JSON.stringify(value),
    ]);
  await update(payload(result.payload));
  try {
    await body();
  } finally {
    await update(result.payload);
  }
}

/** A result payload that says the call was interrupted, in place of the original. */
function interrupted(message: string) {
  return (original: any) => ({
    call_id: original.call_id,
    tool: original.tool,
    ok: false,
    error: { code: 'interrupted', message },
  });
}

describe('the effect rules on a clean journal', () => {
  it('find nothing: three calls in one step, each effect performed once and journaled run', async () => {
    const result = await check();
    expect(result.findings.violations).toEqual([]);
    expect([...effects.effects.values()].map((effect) => effect.performed)).toEqual([1, 1, 1]);
    expect(result.effects).toEqual({ performed: 3, interrupted: 0, rerun: 0 });
    const step = (await events()).filter((row) => row.type === 'tool_call');
    expect(step.map((row) => row.payload.arguments.key).sort()).toEqual([
      `${turnId}.1`,
      `${turnId}.2`,
      `${turnId}.3`,
    ]);
  });

  it('accept a non-idempotent call journaled interrupted after it acted, and count it', async () => {
    await withResult(
      `${turnId}.1`,
      interrupted('the worker running this tool stopped'),
      async () => {
        const result = await check();
        expect(result.findings.violations).toEqual([]);
        expect(result.effects?.interrupted).toBe(1);
      },
    );
  });

  it('accept an idempotent call journaled interrupted when its session was parked', async () => {
    const rows = await events();
    const done = rows.find((row) => row.type === 'done');
    const setTerminal = (type: string, payload: unknown) =>
      server.db.query(
        'update events set type = $3, payload = $4 where session_id = $1 and sequence = $2',
        [sessionId, done.sequence, type, JSON.stringify(payload)],
      );
    await setTerminal('error', {
      code: 'session_parked',
      message: 'the session was claimed 5 times without progress and is parked',
      turn_ids: done.payload.turn_ids,
    });
    try {
      await withResult(
        `${turnId}.2`,
        interrupted('the session was parked while this tool ran'),
        async () => {
          const result = await check();
          expect(
            result.findings.violations.filter(
              (found) => found.check === 'idempotent call runs again',
            ),
          ).toEqual([]);
          expect(result.effects?.interrupted).toBe(1);
        },
      );
    } finally {
      await setTerminal('done', done.payload);
    }
  });

  it('accept an idempotent effect performed twice (run again after a crash), and count it', async () => {
    const result = await check(ledgerWith((copy) => copy.record('touch', `${turnId}.2`)));
    expect(result.findings.violations).toEqual([]);
    expect(result.effects?.rerun).toBe(1);
  });
});

describe('the effect rules find each broken one', () => {
  it('a non-idempotent effect performed twice is doubled', async () => {
    await expectFound(
      'doubled',
      'non-idempotent effect once',
      ledgerWith((copy) => copy.record('charge', `${turnId}.3`)),
    );
  });

  it('an effect whose call the journal does not hold is lost', async () => {
    await expectFound(
      'lost',
      'every effect has its call',
      ledgerWith((copy) => copy.record('charge', 'nobody.1')),
    );
  });

  it('a call journaled as run whose tool never acted is lost', async () => {
    await expectFound(
      'lost',
      'every run call has its effect',
      ledgerWith((copy) => copy.effects.delete(`${turnId}.1`)),
    );
  });

  it('a call that acted, in a turn that ended, with no result is lost', async () => {
    await withResult(
      `${turnId}.3`,
      (original) => ({ ...original, call_id: 'call_elsewhere' }),
      () => expectFound('lost', 'in-doubt call accounted'),
    );
  });

  it('a call that acted but is journaled as never run is a mismatch', async () => {
    await withResult(
      `${turnId}.1`,
      (original) => ({
        call_id: original.call_id,
        tool: original.tool,
        ok: false,
        error: { code: 'superseded', message: 'superseded' },
      }),
      () => expectFound('mismatch', 'not run means not run'),
    );
  });

  it('an idempotent call recorded interrupted instead of run again is a mismatch', async () => {
    await withResult(`${turnId}.2`, interrupted('the worker running this tool stopped'), () =>
      expectFound('mismatch', 'idempotent call runs again'),
    );
  });
});
