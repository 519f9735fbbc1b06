import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Db } from '../../src/store/db.js';
import { openPglite } from '../../src/store/pglite.js';
import type { ChaosCounters } from './chaos.js';
import { checkDatabase } from './checker/index.js';
import { approveWaiting, type DrainResult } from './drain.js';
import { EffectLedger, effectToolsConfig, startEffectServer } from './effects.js';
import { Apis, sleep } from './http.js';
import { Ledger } from './ledger.js';
import type { SoakOptions } from './options.js';
import { Pacer } from './pacer.js';
import { writeParleyConfig } from './parleyConfig.js';
import { freePort } from './postgres.js';
import { Slot } from './processes.js';
import { Random } from './random.js';
import { describeViolations, failed, figuresTable } from './report.js';
import { SessionLoop } from './session.js';
import { endedTimes, slotMarks, writeRunReport } from './timeline.js';

/** What the PostgreSQL soak's entry point lends the embedded one. */
export interface EmbeddedContext {
  root: string;
  log: (line: string) => void;
  childEnvironment: (extra: Record<string, string>) => Record<string, string>;
  migrate: (env: Record<string, string>) => Promise<void>;
  repeat: string;
}

/** Mean interval between SIGKILLs of the one process, and its downtime after each. */
const meanKillIntervalMs = 5_000;
const downtimeMs = { min: 200, max: 2_000 } as const;
/** The least time the server runs between a restart and the next kill. */
const minUptimeMs = 4_000;

/**
 * `npm run soak -- --engine pglite`: the embedded engine under the same clients and the
 * same checker. One `parley serve` (API and worker in one process) owns a PGlite data
 * directory; it is SIGKILLed in a seeded Poisson loop and started again on the same
 * directory (PGlite recovers from its WAL; the data-directory lock of the killed process
 * is stale and taken over). Only one process may own the directory, so the drain looks at
 * the database between clean stops of the server (each must exit 0), and the checker opens
 * the directory with the project's own PGlite storage after the last of them.
 */
export async function runEmbedded(options: SoakOptions, context: EmbeddedContext): Promise<number> {
  const { log } = context;
  const directory = mkdtempSync(join(tmpdir(), 'parley-soak-pglite-'));
  chmodSync(directory, 0o755);
  const dataDir = join(directory, 'data');
  const logDir = join(directory, 'logs');
  mkdirSync(logDir);
  const effects = new EffectLedger();
  const effectServer = await startEffectServer(effects);
  let slot: Slot | null = null;
  try {
    const env = context.childEnvironment({
      PARLEY_DATA_DIR: dataDir,
      PARLEY_CONFIG: writeParleyConfig(directory, effectToolsConfig(effectServer.url)),
      PARLEY_HOST: '127.0.0.1',
      PARLEY_DEMO_DELAY_MS: String(options.demoDelayMs),
      PARLEY_LOG_LEVEL: 'warn',
    });
    await context.migrate(env);
    slot = new Slot(
      'serve',
      0,
      await freePort(),
      { root: context.root, logDir, env },
      {
        leaseLost: /lease lost/,
      },
    );
    await slot.start();
    log(`PGlite ${dataDir}; started ${slot.name} (pid ${slot.pid})`);
    return await soakEmbedded(options, context, slot, dataDir, effects);
  } finally {
    await slot?.close();
    await effectServer.close();
    if (options.keep) log(`kept ${directory} (PGlite data, process log)`);
    else rmSync(directory, { recursive: true, force: true });
  }
}

async function soakEmbedded(
  options: SoakOptions,
  context: EmbeddedContext,
  slot: Slot,
  dataDir: string,
  effects: EffectLedger,
): Promise<number> {
  const { log } = context;
  const began = Date.now();
  const random = new Random(options.seed);
  const ledger = new Ledger();
  const url = slot.url as string;
  const pacer = new Pacer(options.turns, options.durationMs * 0.85);
  const loops = Array.from({ length: options.sessions }, (_, index) => {
    const client = index % options.clients;
    return new SessionLoop(
      { apis: new Apis([url]), ledger, pacer, followTimeoutMs: 90_000 },
      random.fork(`session-${index}`),
      `c${client}s${index}`,
    );
  });
  const kills = planKills(options.seed, options.durationMs);
  log(`chaos plan: ${kills.length} SIGKILLs of parley serve`);
  const ticker = setInterval(() => {
    log(
      `${Math.round((Date.now() - began) / 1000)} s: ${ledger.turns.size} turns acknowledged, ${pacer.remaining} to admit`,
    );
  }, 15_000);
  try {
    let chaosMs = 0;
    const chaos = runKills(kills, slot, log).then((counters) => {
      chaosMs = Date.now() - began;
      return counters;
    });
    const [counters] = await Promise.all([chaos, Promise.all(loops.map((loop) => loop.run()))]);
    log(`chaos over after ${Math.round(chaosMs / 1000)} s; clients done; draining`);
    await slot.ensureUp();
    const apis = new Apis([url]);
    const stops: Stop[] = [];
    const drained = await drainEmbedded(slot, dataDir, apis, random.fork('drain'), options, stops);
    log(`drain: ${drained.open} turns still open after ${Math.round(drained.durationMs / 1000)} s`);

    // The drain's last look stopped the server with SIGTERM: every stop must have been clean.
    const uncleanShutdowns = stops
      .filter((stop) => stop.code !== 0)
      .map((stop) => `${slot.name} (pid ${stop.pid}): code ${stop.code} signal ${stop.signal}`);
    const stoppedPids = new Set(stops.map((stop) => stop.pid));
    const { check, ended } = await withDatabase(dataDir, async (db) => ({
      check: await checkDatabase(db, ledger, { stoppedPids, effects }),
      ended: await endedTimes(db, began),
    }));
    const unexpectedExits = slot.unexpectedExits.map(
      (exit) => `${slot.name}: code ${exit.code} signal ${exit.signal}`,
    );
    const facts = {
      options,
      ledger,
      chaos: counters,
      drain: drained,
      check,
      leasesLost: slot.counts.get('leaseLost') ?? 0,
      failedAttempts: loops.reduce((sum, loop) => sum + loop.apis.failures, 0),
      unexpectedExits,
      uncleanShutdowns,
      chaosMs,
      totalMs: Date.now() - began,
    };
    process.stdout.write(`\n${figuresTable(facts)}\n\n`);
    const written = writeRunReport(options.reportDir, facts, {
      marks: slotMarks([slot], began),
      endedS: ended,
      chaosS: chaosMs / 1000,
      totalS: facts.totalMs / 1000,
      title: `npm run soak -- ${context.repeat}`,
    });
    log(`report: ${written.json}, timeline: ${written.svg}`);
    if (!failed(facts)) {
      log(
        `PASS (PGlite): nothing lost, doubled, reordered or left unfinished (seed ${options.seed})`,
      );
      return 0;
    }
    process.stdout.write(`${describeViolations(check.findings.violations)}\n`);
    for (const line of drained.stuck) process.stdout.write(`stuck: ${line}\n`);
    for (const line of [...unexpectedExits, ...uncleanShutdowns])
      process.stdout.write(`process: ${line}\n`);
    log(`FAIL (seed ${options.seed}); rerun with: npm run soak -- ${context.repeat} --keep`);
    return 1;
  } finally {
    clearInterval(ticker);
  }
}

interface Stop {
  pid: number;
  code: number | null;
  signal: string | null;
}

interface Kill {
  atMs: number;
  downMs: number;
}

/** The kills, as a pure function of the seed (a Poisson process over the chaos phase). */
export function planKills(seed: number, durationMs: number): Kill[] {
  const random = new Random(seed).fork('embedded-chaos');
  const kills: Kill[] = [];
  const last = durationMs - Math.min(3_000, durationMs / 10);
  for (
    let at = Math.min(2_000, durationMs / 10) + random.exponential(meanKillIntervalMs);
    at < last;
    at += random.exponential(meanKillIntervalMs)
  ) {
    kills.push({ atMs: Math.round(at), downMs: random.int(downtimeMs.min, downtimeMs.max) });
  }
  return kills;
}

async function runKills(
  kills: Kill[],
  slot: Slot,
  log: (line: string) => void,
): Promise<ChaosCounters> {
  const counters: ChaosCounters = {
    workerKills: 0,
    workerKillsMidTurn: 0,
    workerStops: 0,
    apiKills: 0,
    postgresRestarts: 0,
    skipped: 0,
  };
  const began = Date.now();
  for (const kill of kills) {
    await sleep(Math.max(0, began + kill.atMs - Date.now()));
    await slot.ensureUp();
    // A schedule that fell behind slow restarts must still let the server serve a while.
    await sleep(Math.max(0, (slot.upSinceMs ?? 0) + minUptimeMs - Date.now()));
    await slot.kill();
    counters.apiKills += 1;
    log(`${(kill.atMs / 1000).toFixed(1)}s SIGKILL parley serve, restart after ${kill.downMs} ms`);
    await sleep(kill.downMs);
    await slot.start();
  }
  return counters;
}

async function withDatabase<T>(dataDir: string, read: (db: Db) => Promise<T>): Promise<T> {
  const db = await openPglite(dataDir);
  try {
    return await read(db);
  } finally {
    await db.close();
  }
}

/**
 * The drain of docs/reliability.md for one process owning its database: each round stops
 * the server cleanly, reads what is still open, starts it again, then approves the
 * requests left waiting and unparks parked sessions through the API.
 */
async function drainEmbedded(
  slot: Slot,
  dataDir: string,
  apis: Apis,
  random: Random,
  options: SoakOptions,
  stops: Stop[],
): Promise<DrainResult> {
  const started = Date.now();
  const deadline = started + options.drainTimeoutMs;
  const result: DrainResult = { open: 0, answered: 0, unparked: 0, durationMs: 0, stuck: [] };
  const tried = new Set<string>();
  for (;;) {
    // Give the server time to finish what it can before each look.
    await sleep(2_000);
    await slot.ensureUp();
    const pid = slot.pid as number;
    stops.push({ pid, ...(await slot.terminate()) });
    const seen = await withDatabase(dataDir, async (db) => ({
      open: (
        await db.query<{ turn_id: string; session_id: string; state: string }>(
          `select turn_id, session_id, state from turns where state in ('queued', 'running')`,
        )
      ).rows,
      waiting: (
        await db.query<{ session_id: string; request_id: string; expected_sequence: number }>(
          `select session_id, request_id, expected_sequence from input_requests where state = 'pending'`,
        )
      ).rows,
      parked: (
        await db.query<{ session_id: string }>(
          `select session_id from sessions where state = 'parked' and input_count > input_cursor`,
        )
      ).rows,
    }));
    result.open = seen.open.length;
    if (result.open === 0 || Date.now() > deadline) {
      result.stuck = seen.open.map((turn) => `${turn.session_id}: ${turn.turn_id} ${turn.state}`);
      break;
    }
    await slot.start();
    result.answered += await approveWaiting(seen.waiting, tried, apis, random);
    for (const session of seen.parked) {
      const answer = await apis.send(
        'POST',
        `/api/v1/admin/sessions/${session.session_id}/unpark`,
        {},
        {
          deadline: Date.now() + 10_000,
          random,
        },
      );
      if (answer?.status === 200) result.unparked += 1;
    }
  }
  result.durationMs = Date.now() - started;
  return result;
}
