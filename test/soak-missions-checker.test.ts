import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkDatabase, type Category } from '../scripts/soak/checker/index.js';
import { Apis } from '../scripts/soak/http.js';
import { Ledger } from '../scripts/soak/ledger.js';
import { MissionLedger, type ExecutionKind } from '../scripts/soak/missionLedger.js';
import { endedStatuses, sendCommand, soakMissions } from '../scripts/soak/missions.js';
import { Random } from '../scripts/soak/random.js';
import { soakSchedules } from '../scripts/soak/schedules.js';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// The soak checker's rules for executions and schedules (scripts/soak/checker/missions.ts)
// on what a real server wrote: the soak's own missions dispatched through the API (a
// one-shot, a loop with durable delays, a blocked loop unblocked with a note, a fan-out, a
// cancel) and the soak's own schedules, one per overlap policy, firing every second or
// few for a few seconds. The checker finds nothing; then each rule is broken in the
// database (or in what the clients were told) and the checker must name it. Every
// corruption is undone, so each case sees the clean database plus one fault.

let server: TestServer;
let apis: Apis;
const random = new Random(17);
const missionLedger = new MissionLedger();
const ids: Partial<Record<ExecutionKind, string>> = {};

async function dispatch(kind: ExecutionKind, mission: string, threads = 0): Promise<string> {
  const executionId = `checkx_${kind}`;
  const body: Record<string, unknown> = { execution_id: executionId };
  if (threads > 0) body.threads = Array.from({ length: threads }, () => ({}));
  const answer = await request(server.url, 'POST', `/api/v1/missions/${mission}/executions`, body);
  expect(answer.status).toBe(202);
  missionLedger.acknowledge({ executionId, mission, kind, threads });
  ids[kind] = executionId;
  return executionId;
}

async function execution(executionId: string): Promise<any> {
  return (await request(server.url, 'GET', `/api/v1/executions/${executionId}`)).body;
}

async function openExecutions(): Promise<number> {
  const found = await server.db.query<{ open: number }>(
    'select count(*)::int as open from executions where ended_at is null',
  );
  return found.rows[0]?.open ?? -1;
}

beforeAll(async () => {
  server = await startTestServer({
    agents: { default: { model: 'demo/echo' } },
    runtime: { execution_recheck_ms: 300 },
    missions: soakMissions,
    schedules: soakSchedules('postgres'),
  });
  apis = new Apis([server.url]);
  await dispatch('once', 'soak_once');
  await dispatch('loop', 'soak_loop');
  await dispatch('fanout', 'soak_once', 2);
  const blocked = await dispatch('blocked', 'soak_blocked');
  const cancel = await dispatch('cancel', 'soak_loop');
  await sendCommand({ apis, ledger: missionLedger }, random, cancel, 'cancel', 'checkc', null);
  await until(
    () => execution(blocked),
    (row) => row.status === 'blocked',
    'a blocked loop',
  );
  const note = 'check unblock checku /decide complete';
  await sendCommand({ apis, ledger: missionLedger }, random, blocked, 'unblock', 'checku', note);
  // The schedules fire for a few seconds more, then stop as the soak stops them.
  await until(
    () =>
      server.db.query<{ schedule: string }>(
        `select schedule from schedule_fires where execution_id is not null
          group by schedule having count(*) >= 2`,
      ),
    (found) => found.rows.length === Object.keys(soakSchedules('postgres')).length,
    'two executions of every schedule',
  );
  await server.db.query('update schedules set next_fire_at = null');
  await until(openExecutions, (open) => open === 0, 'every execution ended', 90_000);
}, 150_000);

afterAll(async () => {
  await server?.close();
});

async function findings(ledger: MissionLedger = missionLedger) {
  const result = await checkDatabase(server.db, new Ledger(), { missions: ledger });
  return result.findings.violations;
}

async function expectFound(
  category: Category,
  check: string,
  ledger: MissionLedger = missionLedger,
): Promise<void> {
  const found = await findings(ledger);
  expect(
    found.some((violation) => violation.category === category && violation.check === check),
    `expected ${category}/${check} among ${JSON.stringify(found)}`,
  ).toBe(true);
}

/** Runs `statement` (with `params`), checks, then runs `undo`: each case starts clean. */
async function broken(
  statement: string,
  params: unknown[],
  undo: string,
  undoParams: unknown[],
  category: Category,
  check: string,
): Promise<void> {
  await server.db.query(statement, params);
  try {
    await expectFound(category, check);
  } finally {
    await server.db.query(undo, undoParams);
  }
}

async function row(executionId: string): Promise<any> {
  return (
    await server.db.query<any>(
      'select status, iteration, ended_at, session_id from executions where execution_id = $1',
      [executionId],
    )
  ).rows[0];
}

async function statusEvents(executionId: string): Promise<any[]> {
  const { session_id } = await row(executionId);
  const found = await server.db.query<any>(
    `select sequence, type, turn_id, payload from events
      where session_id = $1 and type = 'execution_status' order by sequence`,
    [session_id],
  );
  return found.rows.filter((event) => event.payload.execution_id === executionId);
}

/** Appends a copy of one event at the end of its session's journal; returns its undo. */
async function appendCopy(sessionId: string, source: any): Promise<() => Promise<void>> {
  const last = await server.db.query<{ last_sequence: number }>(
    'select last_sequence from sessions where session_id = $1',
    [sessionId],
  );
  const sequence = (last.rows[0]?.last_sequence ?? 0) + 1;
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

describe('the soak checker on executions and schedules a server ran', () => {
  it('finds nothing, and counts the executions and fires', async () => {
    const result = await checkDatabase(server.db, new Ledger(), { missions: missionLedger });
    expect(result.findings.violations).toEqual([]);
    expect(result.totals.scheduleFires).toBeGreaterThanOrEqual(8);
    // Five dispatched, two threads, and the schedules' own.
    expect(result.totals.executions).toBeGreaterThan(7);
    expect(endedStatuses.has((await row(ids.loop as string)).status)).toBe(true);
    expect(await execution(ids.loop as string)).toMatchObject({ status: 'success', iteration: 3 });
    expect((await execution(ids.blocked as string)).status).toBe('success');
    expect((await execution(ids.cancel as string)).status).toBe('cancelled');
  });
});

describe('the soak checker finds each broken execution rule', () => {
  it('an acknowledged execution missing from the database is lost', async () => {
    const told = new MissionLedger();
    told.acknowledge({
      executionId: 'checkx_ghost',
      mission: 'soak_once',
      kind: 'once',
      threads: 0,
    });
    await expectFound('lost', 'execution acknowledged', told);
  });

  it('an execution still running after the drain is unfinished', async () => {
    const id = ids.once as string;
    const before = await row(id);
    await broken(
      "update executions set status = 'running', ended_at = null where execution_id = $1",
      [id],
      'update executions set status = $2, ended_at = $3 where execution_id = $1',
      [id, before.status, before.ended_at],
      'unfinished',
      'execution ended',
    );
  });

  it('two end events for one execution are doubled', async () => {
    const id = ids.once as string;
    const events = await statusEvents(id);
    const end = events.find((event) => endedStatuses.has(event.payload.status));
    const undo = await appendCopy((await row(id)).session_id, end);
    try {
      await expectFound('doubled', 'execution end exactly once');
    } finally {
      await undo();
    }
  });

  it('an ended execution with no end event lost its end', async () => {
    const id = ids.once as string;
    const end = (await statusEvents(id)).find((event) => endedStatuses.has(event.payload.status));
    const { session_id } = await row(id);
    const changed = { ...end.payload, status: 'running' };
    await broken(
      'update events set payload = $3 where session_id = $1 and sequence = $2',
      [session_id, end.sequence, JSON.stringify(changed)],
      'update events set payload = $3 where session_id = $1 and sequence = $2',
      [session_id, end.sequence, JSON.stringify(end.payload)],
      'lost',
      'execution end exactly once',
    );
  });

  it('an iteration announced again after a later one is out of order', async () => {
    const id = ids.loop as string;
    const first = (await statusEvents(id)).find((event) => event.payload.iteration === 1);
    const undo = await appendCopy((await row(id)).session_id, first);
    try {
      await expectFound('order', 'iterations once, in order');
    } finally {
      await undo();
    }
  });

  it("an iteration's turn past the row's count is a delay fired twice", async () => {
    const id = ids.loop as string;
    await broken(
      'update executions set iteration = 2 where execution_id = $1',
      [id],
      'update executions set iteration = 3 where execution_id = $1',
      [id],
      'doubled',
      'iterations once, in order',
    );
  });

  it('an iteration the row counts but nothing announced is lost', async () => {
    const id = ids.loop as string;
    await broken(
      'update executions set iteration = 4 where execution_id = $1',
      [id],
      'update executions set iteration = 3 where execution_id = $1',
      [id],
      'lost',
      'iterations once, in order',
    );
  });

  it('a fan-out that succeeded with a failed thread is a mismatch', async () => {
    const thread = `${ids.fanout}.1`;
    await broken(
      "update executions set status = 'error' where execution_id = $1",
      [thread],
      "update executions set status = 'success' where execution_id = $1",
      [thread],
      'mismatch',
      'fan-out',
    );
  });

  it('a cancel answered cancelled whose execution succeeded is a mismatch', async () => {
    const id = ids.cancel as string;
    await broken(
      "update executions set status = 'success' where execution_id = $1",
      [id],
      "update executions set status = 'cancelled' where execution_id = $1",
      [id],
      'mismatch',
      'command acknowledged',
    );
  });

  it('an acknowledged unblock not recorded is lost', async () => {
    const recorded = (
      await server.db.query<any>("select * from execution_commands where command_id = 'checku'")
    ).rows[0];
    expect(recorded).toBeDefined();
    await broken(
      "delete from execution_commands where command_id = 'checku'",
      [],
      `insert into execution_commands (tenant, command_id, execution_id, kind, result, status, created_at)
       values ($1, $2, $3, $4, $5, $6, $7)`,
      [
        recorded.tenant,
        recorded.command_id,
        recorded.execution_id,
        recorded.kind,
        recorded.result,
        recorded.status,
        recorded.created_at,
      ],
      'lost',
      'command acknowledged',
    );
  });

  it("an unblock's note in two prompts was applied twice", async () => {
    const { session_id } = await row(ids.blocked as string);
    const first = (
      await server.db.query<any>(
        `select message_id, content from messages
          where session_id = $1 and role = 'user' order by sequence limit 1`,
        [session_id],
      )
    ).rows[0];
    await broken(
      'update messages set content = $2 where message_id = $1',
      [first.message_id, `${first.content} check unblock checku /decide complete`],
      'update messages set content = $2 where message_id = $1',
      [first.message_id, first.content],
      'doubled',
      'command acknowledged',
    );
  });
});

describe('the soak checker finds each broken schedule rule', () => {
  async function fires(schedule: string): Promise<any[]> {
    return (
      await server.db.query<any>(
        'select * from schedule_fires where schedule = $1 order by fire_time',
        [schedule],
      )
    ).rows;
  }

  it('a fire time with no fire between the first and the last is lost', async () => {
    const list = await fires('tick_skip');
    expect(list.length).toBeGreaterThanOrEqual(3);
    const middle = list[1];
    await broken(
      'delete from schedule_fires where schedule = $1 and fire_time = $2',
      [middle.schedule, middle.fire_time],
      `insert into schedule_fires (schedule, fire_time, tenant, execution_id, outcome, created_at)
       values ($1, $2, $3, $4, $5, $6)`,
      [
        middle.schedule,
        middle.fire_time,
        middle.tenant,
        middle.execution_id,
        middle.outcome,
        middle.created_at,
      ],
      'lost',
      'schedule fire times',
    );
  });

  it('a skip with nothing running is a mismatch', async () => {
    const list = await fires('tick_skip');
    const last = list[list.length - 1];
    await broken(
      `update schedule_fires set outcome = 'skipped', execution_id = null,
              created_at = created_at + interval '1 hour'
        where schedule = $1 and fire_time = $2`,
      [last.schedule, last.fire_time],
      `update schedule_fires set outcome = $3, execution_id = $4, created_at = $5
        where schedule = $1 and fire_time = $2`,
      [last.schedule, last.fire_time, last.outcome, last.execution_id, last.created_at],
      'mismatch',
      'schedule overlap',
    );
  });

  it('a queued execution that started before its predecessor ended is out of order', async () => {
    const list = (await fires('tick_queue')).filter((fire) => fire.execution_id !== null);
    expect(list.length).toBeGreaterThanOrEqual(2);
    const [before, after] = list as [any, any];
    const previous = await row(before.execution_id);
    await server.db.query(
      `update schedule_fires set outcome = 'queued' where schedule = $1 and fire_time = $2`,
      [after.schedule, after.fire_time],
    );
    await server.db.query('update executions set after_execution_id = $2 where execution_id = $1', [
      after.execution_id,
      before.execution_id,
    ]);
    await broken(
      "update executions set ended_at = now() + interval '1 hour' where execution_id = $1",
      [before.execution_id],
      'update executions set ended_at = $2 where execution_id = $1',
      [before.execution_id, previous.ended_at],
      'order',
      'schedule overlap',
    ).finally(async () => {
      await server.db.query(
        `update schedule_fires set outcome = $3 where schedule = $1 and fire_time = $2`,
        [after.schedule, after.fire_time, after.outcome],
      );
      await server.db.query(
        'update executions set after_execution_id = null where execution_id = $1',
        [after.execution_id],
      );
    });
  });

  it('an execution that outlived the next fire under cancel_previous and was not cancelled', async () => {
    const list = (await fires('tick_cancel')).filter((fire) => fire.execution_id !== null);
    expect(list.length).toBeGreaterThanOrEqual(2);
    const victim = list[0].execution_id as string;
    const before = await row(victim);
    // Its turn went on past the next fire, and the execution then succeeded.
    const late = (sign: '+' | '-') =>
      `update turns set completed_at = completed_at ${sign} interval '1 hour'
        where session_id = $1 and turn_id like 'exec.%'`;
    await server.db.query(late('+'), [before.session_id]);
    try {
      await broken(
        `update executions set status = 'success', ended_at = now() + interval '1 hour'
          where execution_id = $1`,
        [victim],
        'update executions set status = $2, ended_at = $3 where execution_id = $1',
        [victim, before.status, before.ended_at],
        'mismatch',
        'schedule overlap',
      );
    } finally {
      await server.db.query(late('-'), [before.session_id]);
    }
  });

  it('an execution whose work ended before the next fire may succeed, though its row ends later', async () => {
    const list = (await fires('tick_cancel')).filter((fire) => fire.execution_id !== null);
    const victim = list[0].execution_id as string;
    const before = await row(victim);
    // A worker paused after the turn was done writes the execution's end late: the cancel
    // that the next fire asked for came too late, and success is the truth.
    await server.db.query(
      `update executions set status = 'success', ended_at = now() + interval '1 hour'
        where execution_id = $1`,
      [victim],
    );
    try {
      const overlaps = (await findings()).filter(
        (violation) => violation.check === 'schedule overlap',
      );
      expect(overlaps).toEqual([]);
    } finally {
      await server.db.query(
        'update executions set status = $2, ended_at = $3 where execution_id = $1',
        [victim, before.status, before.ended_at],
      );
    }
  });
  it('an execution may succeed past a fire whose transaction committed late (its next execution started later)', async () => {
    const list = (await fires('tick_cancel')).filter((fire) => fire.execution_id !== null);
    const victim = list[0].execution_id as string;
    const next = list[1].execution_id as string;
    const before = await row(victim);
    const after = await row(next);
    // The fire's row reads its transaction's start; a scheduler paused before its commit
    // made the cancel visible only when the next execution could start: an hour later here.
    const shift = (sessionId: string, by: string, column: string) =>
      server.db.query(
        `update turns set ${column} = ${column} + interval '${by}'
          where session_id = $1 and turn_id like 'exec.%'`,
        [sessionId],
      );
    await shift(before.session_id, '30 minutes', 'completed_at');
    await shift(after.session_id, '1 hour', 'created_at');
    try {
      await server.db.query(
        `update executions set status = 'success', ended_at = now() + interval '30 minutes'
          where execution_id = $1`,
        [victim],
      );
      const overlaps = (await findings()).filter(
        (violation) => violation.check === 'schedule overlap',
      );
      expect(overlaps).toEqual([]);
    } finally {
      await server.db.query(
        'update executions set status = $2, ended_at = $3 where execution_id = $1',
        [victim, before.status, before.ended_at],
      );
      await shift(before.session_id, '-30 minutes', 'completed_at');
      await shift(after.session_id, '-1 hour', 'created_at');
    }
  });
});
