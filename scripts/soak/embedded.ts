import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Db } from '../../src/store/db.js';
import { openPglite } from '../../src/store/pglite.js';
import type { ChaosCounters } from './chaos.js';
import { runCourse, type Engine } from './course.js';
import type { DrainAccess } from './drain.js';
import { sleep } from './http.js';
import type { SoakOptions } from './options.js';
import { Outside } from './outside.js';
import { freePort } from './postgres.js';
import { Slot } from './processes.js';
import { Random } from './random.js';
import { slotMarks } from './timeline.js';

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
 * `npm run soak -- --engine pglite`: the embedded engine under the same clients, the same
 * drain and the same checker as the PostgreSQL soak (course.ts). One `parley serve` (API
 * and worker in one process) owns a PGlite data directory; it is SIGKILLed in a seeded
 * Poisson loop and started again on the same directory (PGlite recovers from its WAL; the
 * data-directory lock of the killed process is stale and taken over). Only one process may
 * own the directory, so the drain looks at the database between clean stops of the server
 * (each must exit 0), and the checker opens the directory with the project's own PGlite
 * storage after the last of them.
 */
export async function runEmbedded(options: SoakOptions, context: EmbeddedContext): Promise<number> {
  const { log } = context;
  const directory = mkdtempSync(join(tmpdir(), 'parley-soak-pglite-'));
  chmodSync(directory, 0o755);
  const dataDir = join(directory, 'data');
  const logDir = join(directory, 'logs');
  mkdirSync(logDir);
  const outside = await Outside.start(options);
  let slot: Slot | null = null;
  /** The course's exit code; not 0 until it passed. */
  let code = 1;
  try {
    const env = context.childEnvironment({
      PARLEY_DATA_DIR: dataDir,
      PARLEY_CONFIG: outside.writeConfig(directory, 'pglite'),
      ...outside.env(),
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
    code = await runCourse(options, outside, embeddedEngine(options, context, slot, dataDir), log);
    return code;
  } finally {
    await slot?.close();
    await outside.close();
    // A run that failed keeps its data and log: a rerun of its seed need not fail again.
    if (options.keep || code !== 0) log(`kept ${directory} (PGlite data, process log)`);
    else rmSync(directory, { recursive: true, force: true });
  }
}

function embeddedEngine(
  options: SoakOptions,
  context: EmbeddedContext,
  slot: Slot,
  dataDir: string,
): Engine {
  const kills = planKills(options.seed, options.durationMs);
  context.log(`chaos plan: ${kills.length} SIGKILLs of parley serve`);
  const stops: Stop[] = [];
  const stop = async () => {
    const pid = slot.pid;
    if (pid !== null) stops.push({ pid, ...(await slot.terminate()) });
  };
  return {
    urls: [slot.url as string],
    chaos: () => runKills(kills, slot, context.log),
    ensureUp: () => slot.ensureUp(),
    access: betweenStops(slot, dataDir, stop),
    // The drain's last look stopped the server with SIGTERM: every stop must have been clean.
    stopAll: async () => {
      await stop();
      return {
        stoppedPids: new Set(stops.map((entry) => entry.pid)),
        uncleanShutdowns: stops
          .filter((entry) => entry.code !== 0)
          .map(
            (entry) => `${slot.name} (pid ${entry.pid}): code ${entry.code} signal ${entry.signal}`,
          ),
      };
    },
    unexpectedExits: () =>
      slot.unexpectedExits.map((exit) => `${slot.name}: code ${exit.code} signal ${exit.signal}`),
    leasesLost: () => slot.counts.get('leaseLost') ?? 0,
    marks: (began) => slotMarks([slot], began),
    label: ' (PGlite)',
    repeat: context.repeat,
  };
}

/**
 * The drain's view of a database one process owns: each look stops the server cleanly
 * (`stop`, which records how it exited) and opens the directory with the project's own
 * PGlite storage; the server stays stopped until the drain needs it again (`serve`), and
 * then runs five seconds before the next look (a look costs a stop and a start: fewer,
 * longer runs let it finish more; five seconds also outlast a lease and an execution's
 * re-check).
 */
function betweenStops(slot: Slot, dataDir: string, stop: () => Promise<void>): DrainAccess {
  return {
    read: async (read) => {
      await stop();
      return withDatabase(dataDir, read);
    },
    serve: () => slot.ensureUp(),
    pause: () => sleep(5_000),
  };
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
    // A restart and the least uptime take longer than the mean interval on a loaded
    // machine: a kill overdue by more than that interval is skipped (and counted), so
    // that the chaos ends with its plan instead of running on, killing, long after the
    // clients have admitted their turns.
    if (Date.now() - (began + kill.atMs) > meanKillIntervalMs) {
      counters.skipped += 1;
      continue;
    }
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
