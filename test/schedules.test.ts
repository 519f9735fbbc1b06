import { afterEach, describe, expect, it } from 'vitest';
import { configAgents, configMissions } from '../src/agents/lookup.js';
import { startProcess, type Running } from '../src/cli/start.js';
import type { Config } from '../src/config/types.js';
import { createLogger } from '../src/log.js';
import { createModelRegistry } from '../src/providers/registry.js';
import { Scheduler } from '../src/missions/scheduler.js';
import type { Db } from '../src/store/db.js';
import { openPostgres } from '../src/store/postgres.js';
import { Wakeups } from '../src/store/wakeups.js';
import { testConfig } from './support/config.js';
import { engine, freshStorage } from './support/db.js';
import { until } from './support/poll.js';
import { request } from './support/server.js';

// Schedules (issue 10) against a frozen-then-advanced clock: the process's own scheduler
// runs its loop on that clock, and a second scheduler — on PostgreSQL with its own
// connections, as another worker would — races it for the same fire times.
const log = createLogger({ level: 'silent' });
const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const clean of cleanup.splice(0).reverse()) await clean();
});

class Clock {
  constructor(private time: Date) {}
  now = () => new Date(this.time);
  set(iso: string) {
    this.time = new Date(iso);
  }
}

const missions = {
  quick: { prompt: 'Tick.' },
  lingering: { prompt: 'Poll.', loop_prompt: '/decide continue:9', loop_delay_seconds: 3600 },
};

async function start(
  storage: { url: string | null; dataDir: string },
  schedules: Record<string, unknown>,
  clock: Clock,
  more: { runtime?: Record<string, unknown>; auth?: unknown } = {},
  env: Record<string, string> = {},
): Promise<{ running: Running; config: Config }> {
  const config = testConfig(
    storage,
    {
      ...more,
      runtime: { execution_recheck_ms: 300, ...more.runtime },
      missions,
      schedules,
    },
    env,
  );
  const running = await startProcess(config, { api: true, worker: true }, log, {
    now: clock.now,
    env: { ...process.env, ...env },
  });
  return { running, config };
}

/** Another worker's scheduler: its own connections on PostgreSQL (one process owns PGlite). */
async function secondScheduler(running: Running, config: Config, clock: Clock): Promise<Scheduler> {
  let db: Db = running.db;
  if (engine === 'postgres') {
    const other = await openPostgres(config.storage.url as string, 3);
    cleanup.push(() => other.close());
    db = other;
  }
  return new Scheduler({
    db,
    wakeups: new Wakeups(db),
    config,
    resolveModel: createModelRegistry(config),
    agents: configAgents(config),
    missions: configMissions(config),
    log,
    owner: 'second',
    now: clock.now,
  });
}

async function fires(db: Db, schedule: string) {
  const found = await db.query<{ fire_time: Date; execution_id: string | null; outcome: string }>(
    `select fire_time, execution_id, outcome from schedule_fires where schedule = $1
      order by fire_time`,
    [schedule],
  );
  return found.rows.map((row) => ({
    at: row.fire_time.toISOString().slice(11, 16),
    execution: row.execution_id,
    outcome: row.outcome,
  }));
}

async function executionsOf(db: Db, schedule: string) {
  const found = await db.query<{ execution_id: string; fire_time: Date; status: string }>(
    `select execution_id, fire_time, status from executions where schedule = $1
      order by fire_time`,
    [schedule],
  );
  return found.rows;
}

async function freshProcess(schedules: Record<string, unknown>, clock: Clock) {
  const fresh = await freshStorage();
  const started = await start(fresh.storage, schedules, clock);
  cleanup.push(async () => {
    await started.running.stop();
    await fresh.drop();
  });
  return started;
}

describe('schedules', () => {
  it('fires each cron time exactly once with two schedulers racing', async () => {
    const clock = new Clock(new Date('2026-01-05T09:59:00Z'));
    const { running, config } = await freshProcess(
      { hourly: { mission: 'quick', cron: '0 * * * *', catch_up: 'all', overlap: 'queue' } },
      clock,
    );
    const other = await secondScheduler(running, config, clock);
    const race = async (rounds: number) => {
      for (let round = 0; round < rounds; round++) {
        await Promise.all([other.tick(), other.tick(), running.scheduler?.tick()]);
      }
    };
    await race(3);
    expect(await fires(running.db, 'hourly')).toEqual([]);

    clock.set('2026-01-05T10:00:00Z');
    await race(3);
    // The process's own loop may still hold the row when the explicit ticks skip it.
    await until(
      () => fires(running.db, 'hourly'),
      (found) => found.length === 1,
      'the fire',
    );
    await race(2);
    const epoch = (iso: string) => Date.parse(iso) / 1000;
    expect(await fires(running.db, 'hourly')).toEqual([
      {
        at: '10:00',
        execution: `sched.hourly.${epoch('2026-01-05T10:00:00Z')}`,
        outcome: 'started',
      },
    ]);

    // 11:00 was missed (the clock jumped), 12:00 is on time: catch_up all fires both.
    clock.set('2026-01-05T12:00:30Z');
    await race(3);
    await until(
      () => fires(running.db, 'hourly'),
      (found) => found.length >= 3,
      'the fires',
    );
    await race(2);
    const recorded = await fires(running.db, 'hourly');
    expect(recorded.map((fire) => fire.at)).toEqual(['10:00', '11:00', '12:00']);
    const executions = await executionsOf(running.db, 'hourly');
    expect(executions.map((row) => row.execution_id)).toEqual(
      ['10:00', '11:00', '12:00'].map((at) => `sched.hourly.${epoch(`2026-01-05T${at}:00Z`)}`),
    );
    // They run like any execution (queued one after another: overlap queue).
    for (const row of executions) {
      await until(
        () => request(running.url as string, 'GET', `/api/v1/executions/${row.execution_id}`),
        (answer) => answer.body.status === 'success',
        `${row.execution_id} to succeed`,
      );
    }
    const listed = await request(running.url as string, 'GET', '/api/v1/schedules');
    expect(listed.body.items).toEqual([
      {
        name: 'hourly',
        mission: 'quick',
        cron: '0 * * * *',
        timezone: 'UTC',
        overlap: 'queue',
        catch_up: 'all',
        enabled: true,
        next_fire_at: '2026-01-05T13:00:00.000Z',
        last_fire_at: '2026-01-05T12:00:00.000Z',
        last_execution_id: `sched.hourly.${epoch('2026-01-05T12:00:00Z')}`,
      },
    ]);
  });

  it('handles downtime per catch_up: none, one, all', async () => {
    const clock = new Clock(new Date('2026-01-05T09:59:00Z'));
    const schedules = {
      none: { mission: 'quick', cron: '0 * * * *', catch_up: 'none' },
      one: { mission: 'quick', cron: '0 * * * *', catch_up: 'one' },
      all: { mission: 'quick', cron: '0 * * * *', catch_up: 'all', overlap: 'queue' },
    };
    const fresh = await freshStorage();
    cleanup.push(() => fresh.drop());
    const first = await start(fresh.storage, schedules, clock);
    await first.running.stop();

    // Down from 09:59 to 15:30: six fire times (10:00 … 15:00) were missed.
    clock.set('2026-01-05T15:30:00Z');
    const second = await start(fresh.storage, schedules, clock);
    cleanup.push(() => second.running.stop());
    await second.running.scheduler?.tick();
    const db = second.running.db;
    await until(
      () => fires(db, 'all'),
      (found) => found.length === 6,
      'the catch-up fires',
    );
    await until(
      () => fires(db, 'one'),
      (found) => found.length === 1,
      'the one catch-up fire',
    );
    await second.running.scheduler?.tick();
    expect(await fires(db, 'none')).toEqual([]);
    expect((await fires(db, 'one')).map((fire) => fire.at)).toEqual(['15:00']);
    expect((await fires(db, 'all')).map((fire) => fire.at)).toEqual([
      '10:00',
      '11:00',
      '12:00',
      '13:00',
      '14:00',
      '15:00',
    ]);
    expect(await executionsOf(db, 'all')).toHaveLength(6);
    const listed = await request(second.running.url as string, 'GET', '/api/v1/schedules');
    expect(listed.body.items.map((item: any) => [item.name, item.next_fire_at])).toEqual([
      ['all', '2026-01-05T16:00:00.000Z'],
      ['none', '2026-01-05T16:00:00.000Z'],
      ['one', '2026-01-05T16:00:00.000Z'],
    ]);

    // On time again: every policy fires the 16:00 fire.
    clock.set('2026-01-05T16:00:05Z');
    await second.running.scheduler?.tick();
    await until(
      () => fires(db, 'none'),
      (found) => found.length === 1,
      'the on-time fire',
    );
    expect((await fires(db, 'none')).map((fire) => fire.at)).toEqual(['16:00']);
  });

  it('commits a catch-up a fire time at a time: a fire that fails keeps those before it', async () => {
    const clock = new Clock(new Date('2026-01-05T09:59:00Z'));
    const { running } = await freshProcess(
      { all: { mission: 'quick', cron: '0 * * * *', catch_up: 'all', overlap: 'queue' } },
      clock,
    );
    const db = running.db;
    // The 13:00 fire fails every time (as a scheduler killed there would never commit).
    await db.query(`create function refuse_1300() returns trigger language plpgsql as $$
      begin
        if new.fire_time = '2026-01-05T13:00:00Z'::timestamptz then
          raise exception 'the 13:00 fire fails';
        end if;
        return new;
      end $$`);
    await db.query(`create trigger refuse_1300 before insert on schedule_fires
      for each row execute function refuse_1300()`);
    cleanup.push(async () => {
      await db.query('drop trigger if exists refuse_1300 on schedule_fires');
    });

    // Only this test's ticks fire: the process's own loop is stopped.
    await running.scheduler?.stop();
    clock.set('2026-01-05T15:30:00Z');
    await expect(running.scheduler?.tick()).rejects.toThrow('the 13:00 fire fails');
    // What fired before the failure stayed fired; nothing after it ran.
    expect((await fires(db, 'all')).map((fire) => fire.at)).toEqual(['10:00', '11:00', '12:00']);

    await db.query('drop trigger refuse_1300 on schedule_fires');
    await running.scheduler?.tick();
    expect((await fires(db, 'all')).map((fire) => fire.at)).toEqual([
      '10:00',
      '11:00',
      '12:00',
      '13:00',
      '14:00',
      '15:00',
    ]);
    expect(await executionsOf(db, 'all')).toHaveLength(6);
  });

  it('applies overlap: skip, queue, cancel_previous', async () => {
    const clock = new Clock(new Date('2026-01-05T09:59:00Z'));
    const { running } = await freshProcess(
      {
        skip: { mission: 'lingering', cron: '0 * * * *', overlap: 'skip' },
        queue: { mission: 'lingering', cron: '0 * * * *', overlap: 'queue' },
        cancel: { mission: 'lingering', cron: '0 * * * *', overlap: 'cancel_previous' },
      },
      clock,
    );
    const url = running.url as string;
    const status = async (id: string) =>
      (await request(url, 'GET', `/api/v1/executions/${id}`)).body.status as string;
    const untilStatus = (id: string, expected: string) =>
      until(
        () => status(id),
        (found) => found === expected,
        `${id} to be ${expected}`,
      );

    clock.set('2026-01-05T10:00:00Z');
    await running.scheduler?.tick();
    const first = (name: string) => `sched.${name}.${Date.parse('2026-01-05T10:00:00Z') / 1000}`;
    const second = (name: string) => `sched.${name}.${Date.parse('2026-01-05T11:00:00Z') / 1000}`;
    for (const name of ['skip', 'queue', 'cancel']) await untilStatus(first(name), 'waiting');

    clock.set('2026-01-05T11:00:00Z');
    await running.scheduler?.tick();
    for (const name of ['skip', 'queue', 'cancel']) {
      await until(
        () => fires(running.db, name),
        (found) => found.length === 2,
        `${name} fires`,
      );
    }
    expect(await fires(running.db, 'skip')).toEqual([
      { at: '10:00', execution: first('skip'), outcome: 'started' },
      { at: '11:00', execution: null, outcome: 'skipped' },
    ]);
    expect((await fires(running.db, 'queue')).map((fire) => fire.outcome)).toEqual([
      'started',
      'queued',
    ]);
    await untilStatus(first('cancel'), 'cancelled');
    await untilStatus(second('cancel'), 'waiting');

    // The queued one waits for its predecessor, then starts when it ends.
    expect(await status(second('queue'))).toBe('starting');
    await request(url, 'POST', `/api/v1/executions/${first('queue')}/cancel`, {
      command_id: 'stop_first',
    });
    await untilStatus(second('queue'), 'waiting');
    expect(await status(first('queue'))).toBe('cancelled');
  });
});

describe('switching a schedule off and on', () => {
  const keys = { K_ADMIN: 'sched-admin-key', K_USER: 'sched-user-key', K_OTHER: 'sched-other-key' };
  const auth = {
    keys: [
      { key_env: 'K_ADMIN', tenant: 'acme', user: 'ops', roles: ['admin'] },
      { key_env: 'K_USER', tenant: 'acme', user: 'ann', roles: [] },
      { key_env: 'K_OTHER', tenant: 'globex', user: 'gus', roles: ['admin'] },
    ],
  };
  const as = (key: string) => ({ authorization: `Bearer ${key}` });
  const schedules = {
    none: { mission: 'quick', cron: '0 * * * *', catch_up: 'none', tenant: 'acme' },
    one: { mission: 'quick', cron: '0 * * * *', catch_up: 'one', tenant: 'acme' },
    all: { mission: 'quick', cron: '0 * * * *', catch_up: 'all', overlap: 'queue', tenant: 'acme' },
  };
  const switches = (db: Db) =>
    db.query<{ name: string; tenant: string; enabled: boolean; updated_by: string }>(
      'select name, tenant, enabled, updated_by from schedule_switches order by name',
    );

  it('does not fire while off; on again, the fire times it passed follow catch_up', async () => {
    const clock = new Clock(new Date('2026-01-05T09:59:00Z'));
    const fresh = await freshStorage();
    cleanup.push(() => fresh.drop());
    // At most three catch-up fires: `all` fires the newest three of those it passed.
    const more = { auth, runtime: { max_catch_up_fires: 3 } };
    const first = await start(fresh.storage, schedules, clock, more, keys);
    let running = first.running;
    cleanup.push(() => running.stop());
    const url = () => running.url as string;
    const patch = (name: string, body: unknown, key = keys.K_ADMIN) =>
      request(url(), 'PATCH', `/api/v1/schedules/${name}`, body, as(key));

    for (const name of ['none', 'one', 'all']) {
      const off = await patch(name, { enabled: false });
      expect(off.status).toBe(200);
      expect(off.body).toMatchObject({
        name,
        enabled: false,
        next_fire_at: '2026-01-05T10:00:00.000Z',
      });
    }
    // Off across six fire times (10:00 … 15:00): nothing fires, the timers stay.
    for (const at of ['10:00:00', '12:00:30', '15:30:00']) {
      clock.set(`2026-01-05T${at}Z`);
      expect(await running.scheduler?.tick()).toBe(0);
    }
    for (const name of ['none', 'one', 'all']) expect(await fires(running.db, name)).toEqual([]);
    const listed = await request(url(), 'GET', '/api/v1/schedules', undefined, as(keys.K_USER));
    expect(
      listed.body.items.map((item: any) => [item.name, item.enabled, item.next_fire_at]),
    ).toEqual([
      ['all', false, '2026-01-05T10:00:00.000Z'],
      ['none', false, '2026-01-05T10:00:00.000Z'],
      ['one', false, '2026-01-05T10:00:00.000Z'],
    ]);

    // The switch is durable: a restart (which seeds the schedules again) keeps it.
    await running.stop();
    running = (await start(fresh.storage, schedules, clock, more, keys)).running;
    expect(await running.scheduler?.tick()).toBe(0);
    expect((await switches(running.db)).rows).toEqual([
      { name: 'all', tenant: 'acme', enabled: false, updated_by: 'ops' },
      { name: 'none', tenant: 'acme', enabled: false, updated_by: 'ops' },
      { name: 'one', tenant: 'acme', enabled: false, updated_by: 'ops' },
    ]);

    // On again at 15:30: the six passed fire times are missed ones, as after downtime.
    for (const name of ['none', 'one', 'all']) {
      const on = await patch(name, { enabled: true });
      expect(on.status).toBe(200);
      expect(on.body.enabled).toBe(true);
    }
    await running.scheduler?.tick();
    const db = running.db;
    await until(
      () => fires(db, 'all'),
      (found) => found.length === 3,
      'the catch-up fires',
    );
    await until(
      () => fires(db, 'one'),
      (found) => found.length === 1,
      'the one catch-up fire',
    );
    await running.scheduler?.tick();
    expect(await fires(db, 'none')).toEqual([]);
    expect((await fires(db, 'one')).map((fire) => fire.at)).toEqual(['15:00']);
    expect((await fires(db, 'all')).map((fire) => fire.at)).toEqual(['13:00', '14:00', '15:00']);
    expect(await executionsOf(db, 'all')).toHaveLength(3);
    const after = await request(url(), 'GET', '/api/v1/schedules', undefined, as(keys.K_ADMIN));
    expect(
      after.body.items.map((item: any) => [item.name, item.enabled, item.next_fire_at]),
    ).toEqual([
      ['all', true, '2026-01-05T16:00:00.000Z'],
      ['none', true, '2026-01-05T16:00:00.000Z'],
      ['one', true, '2026-01-05T16:00:00.000Z'],
    ]);

    // Switched off again, a fire time on time does not fire either; the others do.
    await patch('none', { enabled: false });
    clock.set('2026-01-05T16:00:05Z');
    await running.scheduler?.tick();
    await until(
      async () => [(await fires(db, 'one')).length, (await fires(db, 'all')).length],
      ([one, all]) => one === 2 && all === 4,
      'the on-time fires',
    );
    expect(await fires(db, 'none')).toEqual([]);
    expect(await running.scheduler?.tick()).toBe(0);

    // A schedule no longer configured loses its switch: configured again, it starts on.
    await running.stop();
    const kept = { one: schedules.one, all: schedules.all };
    running = (await start(fresh.storage, kept, clock, more, keys)).running;
    expect((await switches(running.db)).rows.map((row) => row.name)).toEqual(['all', 'one']);
  });

  it('is for the schedule tenant’s admins; bad input and unknown names write nothing', async () => {
    const clock = new Clock(new Date('2026-01-05T09:59:00Z'));
    const fresh = await freshStorage();
    cleanup.push(() => fresh.drop());
    const { running } = await start(fresh.storage, schedules, clock, { auth }, keys);
    cleanup.push(() => running.stop());
    const url = running.url as string;
    const patch = (path: string, body: unknown, key = keys.K_ADMIN) =>
      request(url, 'PATCH', `/api/v1/schedules/${path}`, body, as(key));

    const user = await patch('one', { enabled: false }, keys.K_USER);
    expect(user.status).toBe(403);
    expect(user.body.error).toBe('forbidden');
    // Another tenant's admin: the same answer as for a schedule nobody has.
    const foreign = await patch('one', { enabled: false }, keys.K_OTHER);
    const missing = await patch('nothing', { enabled: false }, keys.K_OTHER);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toBe('schedule_not_found');
    expect(foreign.body).toEqual({ error: 'schedule_not_found', message: 'no schedule "one"' });
    expect(missing.body).toEqual({
      error: 'schedule_not_found',
      message: 'no schedule "nothing"',
    });
    for (const body of [{}, { enabled: 'false' }, { enabled: null }, { enabled: true, x: 1 }, []]) {
      const bad = await patch('one', body);
      expect(bad.status, JSON.stringify(body)).toBe(400);
      expect(bad.body.error).toBe('invalid_request');
    }
    const unknown = await patch('nothing', { enabled: false });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe('schedule_not_found');
    expect((await switches(running.db)).rows).toEqual([]);
    const listed = await request(url, 'GET', '/api/v1/schedules', undefined, as(keys.K_OTHER));
    expect(listed.body.items).toEqual([]);
  });
});
