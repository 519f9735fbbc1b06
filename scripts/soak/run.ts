/**
 * `npm run soak`: Parley's chaos soak (docs/reliability.md). On a private PostgreSQL
 * cluster it runs `parley api` ×2 and `parley worker` ×3 (the real CLI, from dist/),
 * lets clients admit turns, follow them, answer approvals and cancel, while a seeded
 * schedule SIGKILLs and SIGSTOPs workers, SIGKILLs API processes and restarts PostgreSQL
 * once. Then it lets the system drain, stops every process, and checks the whole database
 * against the journal invariants and against what the clients were told. Figures go to
 * stdout; the exit code is non-zero on any violation.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Db } from '../../src/store/db.js';
import { openPostgres } from '../../src/store/postgres.js';
import { runChaos } from './chaos.js';
import { childEnvironment, migrate } from './children.js';
import { runCourse, type Engine } from './course.js';
import { directAccess } from './drain.js';
import { runEmbedded } from './embedded.js';
import { OptionsError, parseOptions, usage, type SoakOptions } from './options.js';
import { Outside } from './outside.js';
import { leaseTtlMs } from './parleyConfig.js';
import { freePort, PrivateCluster } from './postgres.js';
import { Slot } from './processes.js';
import { planChaos } from './schedule.js';
import { slotMarks, type TimelineMark } from './timeline.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const log = (line: string) => process.stdout.write(`soak: ${line}\n`);

async function main(argv: string[]): Promise<number> {
  let options: SoakOptions | 'help';
  try {
    options = parseOptions(argv);
  } catch (error) {
    if (!(error instanceof OptionsError || error instanceof TypeError)) throw error;
    process.stderr.write(`soak: ${error.message}\n\n${usage}`);
    return 2;
  }
  if (options === 'help') {
    process.stdout.write(usage);
    return 0;
  }
  if (!existsSync(join(root, 'dist', 'cli', 'main.js'))) {
    process.stderr.write(
      'soak: dist/cli/main.js is missing: npm run build first (npm run soak does)\n',
    );
    return 2;
  }
  log(
    `seed ${options.seed}: ${options.turns} turns, ${options.sessions} sessions, ${options.clients} clients, ${options.durationMs / 1000} s of chaos`,
  );
  log(`repeat this plan with: npm run soak -- ${repeatFlags(options)}`);
  if (options.engine === 'pglite') {
    return runEmbedded(options, {
      root,
      log,
      childEnvironment,
      migrate,
      repeat: repeatFlags(options),
    });
  }
  const directory = mkdtempSync(join(tmpdir(), 'parley-soak-'));
  // The postgres OS user must reach its data directory inside.
  chmodSync(directory, 0o755);
  const slots: Slot[] = [];
  const outside = await Outside.start(options);
  let cluster: PrivateCluster | null = null;
  let db: Db | null = null;
  /** The course's exit code; not 0 until it passed. */
  let code = 1;
  const abort = () => {
    for (const slot of slots) void slot.close();
    void outside.close();
    void cluster?.stop().finally(() => {
      if (!options.keep) rmSync(directory, { recursive: true, force: true });
      process.exit(130);
    });
  };
  process.once('SIGINT', abort);
  process.once('SIGTERM', abort);
  try {
    cluster = await PrivateCluster.create(directory);
    log(`PostgreSQL ${cluster.describe}`);
    const logDir = join(directory, 'logs');
    mkdirSync(logDir);
    const env = childEnvironment({
      DATABASE_URL: cluster.url,
      PARLEY_CONFIG: outside.writeConfig(directory, 'postgres'),
      ...outside.env(),
      PARLEY_HOST: '127.0.0.1',
      PARLEY_DEMO_DELAY_MS: String(options.demoDelayMs),
      PARLEY_LOG_LEVEL: 'warn',
    });
    await migrate(env);
    const environment = { root, logDir, env };
    // API 1 is `parley serve`: its admissions claim their sessions for its own worker and
    // read their history with the claim (the admission's claim), killed as an API.
    const apis = [0, 1].map(
      async (index) =>
        new Slot(index === 0 ? 'api' : 'serve', index, await freePort(), environment, {
          leaseLost: /lease lost/,
        }),
    );
    slots.push(...(await Promise.all(apis)));
    for (const index of [0, 1, 2]) {
      slots.push(new Slot('worker', index, null, environment, { leaseLost: /lease lost/ }));
    }
    await Promise.all(slots.map((slot) => slot.start()));
    log(`started ${slots.map((slot) => `${slot.name} (pid ${slot.pid})`).join(', ')}`);
    db = await openPostgres(cluster.url, 3);
    code = await runCourse(options, outside, splitEngine(options, cluster, db, slots), log);
    return code;
  } finally {
    process.removeListener('SIGINT', abort);
    process.removeListener('SIGTERM', abort);
    for (const slot of slots) await slot.close();
    await db?.close().catch(() => {});
    await cluster?.stop();
    await outside.close();
    // A run that failed keeps its data and logs: a rerun of its seed need not fail again.
    if (options.keep || code !== 0) log(`kept ${directory} (PostgreSQL data, process logs)`);
    else rmSync(directory, { recursive: true, force: true });
  }
}

/**
 * PostgreSQL with split processes: `parley api`, `parley serve` (an API with a worker of
 * its own) and worker ×3 under a seeded schedule of worker
 * SIGKILLs and SIGSTOPs, API SIGKILLs and a PostgreSQL restart; the drain and the checker
 * query the database beside the running processes.
 */
function splitEngine(options: SoakOptions, cluster: PrivateCluster, db: Db, slots: Slot[]): Engine {
  const workers = slots.filter((slot) => slot.role === 'worker');
  const apiSlots = slots.filter((slot) => slot.role !== 'worker');
  const actions = planChaos(options.seed, {
    durationMs: options.durationMs,
    workers: workers.length,
    apis: apiSlots.length,
    leaseTtlMs,
  });
  const planned = (kind: string) => actions.filter((action) => action.kind === kind).length;
  log(
    `chaos plan: ${planned('kill_worker')} worker SIGKILLs, ${planned('stop_worker')} SIGSTOPs, ${planned('kill_api')} API SIGKILLs, ${planned('restart_postgres')} PostgreSQL restart`,
  );
  const postgresMarks: TimelineMark[] = [];
  return {
    urls: apiSlots.map((slot) => slot.url as string),
    chaos: (began: number) =>
      runChaos(actions, {
        workers,
        apis: apiSlots,
        cluster,
        restartMode: options.postgresRestartMode,
        leasesHeldBy: (pid) => leasesHeldBy(db, pid),
        log: (line) => {
          if (line.includes('restart PostgreSQL')) {
            postgresMarks.push({
              atS: (Date.now() - began) / 1000,
              kind: 'restart',
              target: 'postgres',
            });
          }
          log(line);
        },
      }),
    ensureUp: async () => {
      for (const slot of slots) await slot.ensureUp();
    },
    access: directAccess(db),
    stopAll: async () => {
      const uncleanShutdowns: string[] = [];
      const stoppedPids = new Set<number>();
      for (const slot of slots) {
        await slot.ensureUp();
        if (slot.pid !== null) stoppedPids.add(slot.pid);
        const exit = await slot.terminate();
        if (exit.code !== 0)
          uncleanShutdowns.push(`${slot.name}: code ${exit.code} signal ${exit.signal}`);
      }
      return { stoppedPids, uncleanShutdowns };
    },
    unexpectedExits: () =>
      slots.flatMap((slot) =>
        slot.unexpectedExits.map((exit) => `${slot.name}: code ${exit.code} signal ${exit.signal}`),
      ),
    leasesLost: () => slots.reduce((sum, slot) => sum + (slot.counts.get('leaseLost') ?? 0), 0),
    marks: (began: number) => [...slotMarks(slots, began), ...postgresMarks],
    label: '',
    repeat: repeatFlags(options),
  };
}

async function leasesHeldBy(db: Db, pid: number): Promise<number> {
  try {
    const found = await db.query<{ held: number }>(
      `select count(*)::int as held from sessions
        where lease_owner like $1 and lease_expires_at > now()`,
      [`%:${pid}`],
    );
    return found.rows[0]?.held ?? 0;
  } catch {
    return -1;
  }
}

function repeatFlags(options: SoakOptions): string {
  return [
    options.short ? '--short' : '',
    options.long ? '--long' : '',
    options.engine === 'pglite' ? '--engine pglite' : '',
    `--seed ${options.seed}`,
    `--turns ${options.turns}`,
    `--sessions ${options.sessions}`,
    `--clients ${options.clients}`,
    `--duration ${options.durationMs / 1000}`,
  ]
    .filter((flag) => flag !== '')
    .join(' ');
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`soak: ${(error as Error).stack ?? String(error)}\n`);
    process.exitCode = 1;
  },
);
