/**
 * Missions' timers and the scheduler (issue 10), measured on one engine's fresh database:
 *
 * - 1,000 timers due at once, drained by 3 execution runners (on PostgreSQL each with its
 *   own connection pool, as three workers would; PGlite is one process, so there the three
 *   share it): fires per second, where a fire is a runner claiming a due execution,
 *   admitting its iteration's turn and saving its new state — and a check that each timer
 *   fired exactly once (one turn and one `running` announcement per execution).
 * - The scheduler's overhead: one tick (the due-schedules claim and the next-fire read)
 *   with 0 and with 10,000 idle schedules, median of 200 ticks.
 *
 * No drain workers run: the turns stay queued, so only the timer machinery is measured.
 * `npm run bench` runs it after the other figures; alone:
 * `node --import tsx bench/missions.ts [pglite|postgres]` (PARLEY_BENCH_DATABASE_URL).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { configAgents, configMissions } from '../src/agents/lookup.js';
import { compileConfig } from '../src/config/load.js';
import { createLogger } from '../src/log.js';
import { dispatchOf } from '../src/missions/dispatch.js';
import { createModelRegistry } from '../src/providers/registry.js';
import type { ExecutionDeps } from '../src/missions/deps.js';
import { ExecutionRunner } from '../src/missions/runner.js';
import { Scheduler } from '../src/missions/scheduler.js';
import { createExecution } from '../src/store/createExecution.js';
import type { Db } from '../src/store/db.js';
import { migrate } from '../src/store/migrate.js';
import { openPglite } from '../src/store/pglite.js';
import { openPostgres } from '../src/store/postgres.js';
import { Wakeups } from '../src/store/wakeups.js';
import { median, round } from './stats.js';

const timers = 1000;
const runners = 3;
const idleSchedules = 10_000;
const ticks = 200;

export interface MissionsFigures {
  timers: {
    count: number;
    runners: number;
    seconds: number;
    fires_per_second: number;
    each_once: boolean;
  };
  scheduler: {
    tick_ms_no_schedules: number;
    tick_ms_idle_schedules: number;
    idle_schedules: number;
  };
}

const config = compileConfig(
  {
    storage: { data_dir: 'unused' },
    // Re-checks far away: a fired execution must not be due again during the measurement.
    runtime: { execution_recheck_ms: 600_000, max_parallel_executions: 64, poll_ms: 200 },
    missions: { bench: { prompt: 'Timer fired.' } },
  },
  { PARLEY_DEMO_DELAY_MS: '0' },
  'bench',
);

function deps(db: Db, owner: string, now?: () => Date): ExecutionDeps {
  return {
    db,
    wakeups: new Wakeups(db),
    config,
    resolveModel: createModelRegistry(config),
    agents: configAgents(config),
    missions: configMissions(config),
    log: createLogger({ level: 'silent' }),
    owner,
    ...(now ? { now } : {}),
  };
}

async function count(db: Db, sql: string): Promise<number> {
  const found = await db.query<{ n: number }>(sql);
  return Number(found.rows[0]?.n ?? 0);
}

async function measureTimers(dbs: Db[]): Promise<MissionsFigures['timers']> {
  const [db] = dbs as [Db];
  const mission = configMissions(config).get('default', 'bench');
  if (!mission) throw new Error('no bench mission');
  for (let index = 0; index < timers; index++) {
    await createExecution(
      db,
      dispatchOf(
        mission,
        {
          tenant: 'default',
          executionId: `bench_${index}`,
          user: 'bench',
          agent: 'default',
          input: {},
          threads: null,
          priority: null,
          timeoutSeconds: null,
        },
        () => 'tenant',
      ),
    );
  }
  // Every timer due at the same instant.
  await db.query(`update executions set next_run_at = now()`);
  const started = performance.now();
  const running = dbs.map((each, index) => new ExecutionRunner(deps(each, `runner-${index}`)));
  for (const runner of running) runner.start();
  for (;;) {
    const fired = await count(db, `select count(*) as n from turns where turn_id like 'exec.%'`);
    if (fired >= timers) break;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  const seconds = (performance.now() - started) / 1000;
  await Promise.all(running.map((runner) => runner.stop()));
  const turns = await count(db, `select count(*) as n from turns where turn_id like 'exec.%'`);
  const announced = await count(
    db,
    `select count(*) as n from events where type = 'execution_status' and payload ->> 'status' = 'running'`,
  );
  const running_ = await count(db, `select count(*) as n from executions where status = 'running'`);
  return {
    count: timers,
    runners,
    seconds: round(seconds, 2),
    fires_per_second: round(timers / seconds, 0),
    each_once: turns === timers && announced === timers && running_ === timers,
  };
}

async function tickMs(scheduler: Scheduler): Promise<number> {
  const samples: number[] = [];
  for (let index = 0; index < ticks; index++) {
    const started = performance.now();
    await scheduler.tick();
    samples.push(performance.now() - started);
  }
  return round(median(samples), 3);
}

async function measureScheduler(db: Db): Promise<MissionsFigures['scheduler']> {
  const now = new Date('2026-01-05T10:00:00Z');
  const scheduler = new Scheduler(deps(db, 'scheduler', () => now));
  const empty = await tickMs(scheduler);
  // 10,000 schedules whose next fire is a year away: idle, but in the table and the index.
  await db.query(
    `insert into schedules (name, tenant, definition, content_hash, next_fire_at)
     select 'idle_' || n, 'default',
            '{"mission": "bench", "cron": "0 0 1 1 *", "timezone": "UTC", "input": {}}'::jsonb,
            'x', timestamptz '2027-01-01T00:00:00Z'
       from generate_series(1, $1) n`,
    [idleSchedules],
  );
  const idle = await tickMs(scheduler);
  return {
    tick_ms_no_schedules: empty,
    tick_ms_idle_schedules: idle,
    idle_schedules: idleSchedules,
  };
}

/** Both measurements on a fresh database of `engine`. */
export async function benchMissions(
  engine: 'pglite' | 'postgres',
  adminUrl: string | null,
): Promise<MissionsFigures> {
  if (engine === 'pglite') {
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-missions-'));
    const db = await openPglite(dataDir);
    try {
      await migrate(db);
      // One embedded process: the three runners share its one database handle.
      const timersFigure = await measureTimers([db, db, db]);
      return { timers: timersFigure, scheduler: await measureScheduler(db) };
    } finally {
      await db.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
  if (!adminUrl) throw new Error('no PostgreSQL admin URL');
  const name = `parley_bench_m_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const dbs: Db[] = [];
  try {
    for (let index = 0; index < runners; index++) dbs.push(await openPostgres(url.toString(), 4));
    await migrate(dbs[0] as Db);
    const timersFigure = await measureTimers(dbs);
    return { timers: timersFigure, scheduler: await measureScheduler(dbs[0] as Db) };
  } finally {
    for (const db of dbs) await db.close();
    const dropper = new pg.Client({ connectionString: adminUrl });
    await dropper.connect();
    await dropper.query(`drop database if exists ${name} with (force)`);
    await dropper.end();
  }
}

export function missionsTable(
  figures: Partial<Record<'pglite' | 'postgres', MissionsFigures>>,
): string {
  const cell = (engine: 'pglite' | 'postgres', get: (figure: MissionsFigures) => string) => {
    const figure = figures[engine];
    return figure ? get(figure) : 'not run';
  };
  const rows: [string, (figure: MissionsFigures) => string][] = [
    [
      `8. ${timers} timers due at once, ${runners} runners: fires/s`,
      (figure) => `${figure.timers.fires_per_second} (${figure.timers.seconds} s)`,
    ],
    ['   each fired exactly once', (figure) => (figure.timers.each_once ? 'yes' : 'NO')],
    [
      '   scheduler tick, no schedules (ms)',
      (figure) => String(figure.scheduler.tick_ms_no_schedules),
    ],
    [
      `   scheduler tick, ${idleSchedules} idle schedules (ms)`,
      (figure) => String(figure.scheduler.tick_ms_idle_schedules),
    ],
  ];
  const width = Math.max(...rows.map(([label]) => label.length)) + 2;
  return rows
    .map(
      ([label, get]) =>
        `${label.padEnd(width)}${cell('pglite', get).padEnd(22)}${cell('postgres', get)}`,
    )
    .join('\n');
}

async function main(): Promise<void> {
  const engines = (process.argv[2] ?? 'pglite,postgres').split(',');
  const figures: Partial<Record<'pglite' | 'postgres', MissionsFigures>> = {};
  if (engines.includes('pglite')) figures.pglite = await benchMissions('pglite', null);
  if (engines.includes('postgres')) {
    const url =
      process.env.PARLEY_BENCH_DATABASE_URL ??
      execFileSync('bash', ['scripts/ensure-postgres.sh'], { encoding: 'utf8' }).trim();
    figures.postgres = await benchMissions('postgres', url);
  }
  process.stdout.write(`${JSON.stringify(figures, null, 2)}\n\n${missionsTable(figures)}\n`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((error: unknown) => {
    process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
    process.exitCode = 1;
  });
}
