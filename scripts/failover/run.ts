/**
 * `npm run failover`: Parley through the loss of its PostgreSQL primary
 * (docs/deployment.md). On a private pg_auto_failover formation (monitor + two nodes, the
 * standby synchronous, loopback ports) it runs `parley api` ×2 and `parley worker` ×2 from
 * dist/, configured with the multi-host URL of both nodes, while the soak's clients admit,
 * follow and answer turns. A third of the way in it SIGKILLs the primary's machine (its
 * pg_autoctl keeper, PostgreSQL and backends); pg_auto_failover promotes the standby. The
 * clients retry as the protocol tells them (same turn_id). At the end the soak's checker
 * reads the new primary: nothing acknowledged lost, nothing doubled; and the times from
 * the kill to the promotion and to the first turn committed on the new primary are printed.
 *
 * Needs Debian's postgresql-15-auto-failover and pg-auto-failover-cli; not part of CI.
 * Options: --turns N (default 120), --sessions N (default 12), --keep (keep the data).
 */
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { Db } from '../../src/store/db.js';
import { openPostgres } from '../../src/store/postgres.js';
import { categories, checkDatabase } from '../soak/checker/index.js';
import { directAccess, drain } from '../soak/drain.js';
import { childEnvironment, migrate } from '../soak/children.js';
import { Apis, sleep } from '../soak/http.js';
import { Ledger } from '../soak/ledger.js';
import { Pacer } from '../soak/pacer.js';
import { writeParleyConfig } from '../soak/parleyConfig.js';
import { freePort } from '../soak/postgres.js';
import { Slot } from '../soak/processes.js';
import { Random, randomSeed } from '../soak/random.js';
import { describeViolations } from '../soak/report.js';
import { SessionLoop } from '../soak/session.js';
import { Formation, postgresIds, type FormationNode } from './formation.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const log = (line: string) => process.stdout.write(`failover: ${line}\n`);

interface Options {
  turns: number;
  sessions: number;
  windowMs: number;
  seed: number;
  keep: boolean;
}

function parseOptions(argv: string[]): Options {
  const options: Options = {
    turns: 120,
    sessions: 12,
    windowMs: 150_000,
    seed: randomSeed(),
    keep: false,
  };
  const numeric = { '--turns': 'turns', '--sessions': 'sessions', '--seed': 'seed' } as const;
  for (let index = 0; index < argv.length; index++) {
    const flag = argv[index] as string;
    if (flag === '--keep') {
      options.keep = true;
      continue;
    }
    const value = Number(argv[++index]);
    if (flag === '--window' && value > 0) options.windowMs = value * 1000;
    else if (flag in numeric && Number.isInteger(value) && value > 0) {
      options[numeric[flag as keyof typeof numeric]] = value;
    } else {
      throw new Error(`bad option ${flag} (--turns N --sessions N --window S --seed N --keep)`);
    }
  }
  return options;
}

/** Times from the kill, in ms, as seen on the new primary. */
interface Timeline {
  promotedMs: number | null;
  writableMs: number | null;
  firstAdmittedMs: number | null;
  firstCompletedMs: number | null;
}

async function main(argv: string[]): Promise<number> {
  const options = parseOptions(argv);
  if (!existsSync(join(root, 'dist', 'cli', 'main.js'))) {
    process.stderr.write('failover: dist/cli/main.js is missing: npm run build first\n');
    return 2;
  }
  const directory = mkdtempSync(join(tmpdir(), 'parley-failover-'));
  chmodSync(directory, 0o755);
  const formationDir = join(directory, 'formation');
  mkdirSync(formationDir);
  if (userInfo().uid === 0) {
    const { uid, gid } = postgresIds();
    chownSync(formationDir, uid, gid);
  }
  const formation = new Formation(formationDir, log);
  const slots: Slot[] = [];
  let db: Db | null = null;
  try {
    log(`seed ${options.seed}: ${options.turns} turns over ${options.windowMs / 1000} s`);
    log('creating the pg_auto_failover formation (monitor + 2 nodes)');
    await formation.create();
    const first = await formation.primary();
    const standby = formation.nodes.find((node) => node !== first) as FormationNode;
    log(
      `primary ${first.name} :${first.port}, standby ${standby.name} :${standby.port}, synchronous_standby_names = ${await formation.synchronousStandbys(first)}`,
    );
    log(`storage.url ${formation.formationUrl}`);

    const logDir = join(directory, 'logs');
    mkdirSync(logDir);
    const env = childEnvironment({
      DATABASE_URL: formation.formationUrl,
      PARLEY_CONFIG: writeParleyConfig(directory, 'postgres'),
      PARLEY_HOST: '127.0.0.1',
      PARLEY_DEMO_DELAY_MS: '20',
      PARLEY_LOG_LEVEL: 'warn',
    });
    await migrate(env);
    const environment = { root, logDir, env };
    for (const index of [0, 1]) {
      slots.push(new Slot('api', index, await freePort(), environment));
    }
    for (const index of [0, 1]) {
      slots.push(new Slot('worker', index, null, environment, { leaseLost: /lease lost/ }));
    }
    await Promise.all(slots.map((slot) => slot.start()));
    log(`started ${slots.map((slot) => `${slot.name} (pid ${slot.pid})`).join(', ')}`);
    db = await openPostgres(formation.formationUrl, 3);

    const random = new Random(options.seed);
    const urls = slots.filter((slot) => slot.role === 'api').map((slot) => slot.url as string);
    const ledger = new Ledger();
    const pacer = new Pacer(options.turns, options.windowMs);
    const clientApis = [new Apis(urls), new Apis(urls)];
    clientApis[1]?.pick();
    const loops = Array.from(
      { length: options.sessions },
      (_, index) =>
        new SessionLoop(
          { apis: clientApis[index % 2] as Apis, ledger, pacer, followTimeoutMs: 120_000 },
          random.fork(`session-${index}`),
          `f${index}`,
        ),
    );
    const began = Date.now();
    const clients = Promise.all(loops.map((loop) => loop.run()));

    // A third of the turns acknowledged: the primary's machine goes.
    while (ledger.turns.size < options.turns / 3) await sleep(200);
    const acknowledgedBefore = ledger.turns.size;
    const killedAt = Date.now();
    const victims = formation.killNode(first);
    log(
      `${Math.round((killedAt - began) / 1000)} s: SIGKILL ${first.name} (pids ${victims.join(' ')}), ${acknowledgedBefore} turns acknowledged so far`,
    );
    // Turns from here on can only be committed on the new primary: the old one is dead.
    const timeline = await watchPromotion(formation.nodeUrl(standby), killedAt, Date.now());
    log(
      `promoted after ${seconds(timeline.promotedMs)}, writable after ${seconds(timeline.writableMs)}, first turn committed on it after ${seconds(timeline.firstAdmittedMs)}, first turn completed after ${seconds(timeline.firstCompletedMs)}`,
    );
    await clients;
    log(`clients done after ${Math.round((Date.now() - began) / 1000)} s; draining`);
    for (const slot of slots) await slot.ensureUp();
    const drained = await drain(directAccess(db), new Apis(urls), random.fork('drain'), 120_000);
    const stoppedPids = new Set<number>();
    const uncleanShutdowns: string[] = [];
    for (const slot of slots) {
      if (slot.pid !== null) stoppedPids.add(slot.pid);
      const exit = await slot.terminate();
      if (exit.code !== 0) uncleanShutdowns.push(`${slot.name}: ${exit.code} ${exit.signal}`);
    }
    const check = await checkDatabase(db, ledger, { stoppedPids });
    const unexpectedExits = slots.flatMap((slot) =>
      slot.unexpectedExits.map((exit) => `${slot.name}: ${exit.code} ${exit.signal}`),
    );
    const states = await formation.states();
    const rows: [string, string | number][] = [
      ['turns acknowledged (202)', ledger.turns.size],
      ['of which before the kill', acknowledgedBefore],
      ['turns given up without a 202', ledger.counters.unacknowledged],
      [
        'client attempts retried (no answer, 5xx)',
        clientApis[0]!.failures + clientApis[1]!.failures,
      ],
      ['kill → standby promoted', seconds(timeline.promotedMs)],
      ['kill → new primary writable', seconds(timeline.writableMs)],
      ['kill → first turn committed on the new primary', seconds(timeline.firstAdmittedMs)],
      ['kill → first turn completed on the new primary', seconds(timeline.firstCompletedMs)],
      ['turns in the new primary', check.totals.turns],
      ['turns still open after the drain', drained.open],
      ...categories.map((category): [string, number] => [category, check.findings.count(category)]),
      ['Parley process exits nobody asked for', unexpectedExits.length],
      [
        'states last reported to the monitor',
        [...states].map(([name, state]) => `${name} ${state}`).join(', '),
      ],
    ];
    process.stdout.write(
      `\n| figure | value |\n| --- | --- |\n${rows.map(([name, value]) => `| ${name} | ${value} |`).join('\n')}\n\n`,
    );
    const ok =
      check.findings.violations.length === 0 &&
      drained.open === 0 &&
      unexpectedExits.length === 0 &&
      uncleanShutdowns.length === 0 &&
      timeline.firstAdmittedMs !== null;
    if (ok) {
      log(`PASS: 0 acknowledged turns lost, 0 doubled across the failover (seed ${options.seed})`);
      return 0;
    }
    process.stdout.write(`${describeViolations(check.findings.violations)}\n`);
    for (const line of [...drained.stuck, ...unexpectedExits, ...uncleanShutdowns]) {
      process.stdout.write(`${line}\n`);
    }
    log(`FAIL (seed ${options.seed}); logs in ${directory} with --keep`);
    return 1;
  } finally {
    for (const slot of slots) await slot.close();
    await db?.close().catch(() => {});
    await formation.stop();
    if (options.keep) log(`kept ${directory}`);
    else rmSync(directory, { recursive: true, force: true });
  }
}

/**
 * Polls the standby from the kill on: when it leaves recovery, when it takes writes
 * (pg_auto_failover keeps a promoted node read-only until the old primary must have
 * demoted itself), and when the first turn admitted and completed after the kill appear.
 */
async function watchPromotion(url: string, killedAt: number, after: number): Promise<Timeline> {
  const timeline: Timeline = {
    promotedMs: null,
    writableMs: null,
    firstAdmittedMs: null,
    firstCompletedMs: null,
  };
  const since = new Date(after);
  const deadline = killedAt + 300_000;
  while (
    Date.now() < deadline &&
    (timeline.firstCompletedMs === null || timeline.writableMs === null)
  ) {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
    client.on('error', () => {});
    try {
      await client.connect();
      const { rows } = await client.query<{
        recovery: boolean;
        read_only: string;
        admitted: Date | null;
        completed: Date | null;
      }>(
        `select pg_is_in_recovery() as recovery,
                current_setting('transaction_read_only') as read_only,
                (select min(created_at) from turns where created_at > $1) as admitted,
                (select min(completed_at) from turns
                  where completed_at > $1 and state = 'done') as completed`,
        [since],
      );
      const row = rows[0];
      const now = Date.now() - killedAt;
      if (row && !row.recovery) timeline.promotedMs ??= now;
      if (row && row.read_only === 'off') timeline.writableMs ??= now;
      if (row?.admitted) timeline.firstAdmittedMs ??= row.admitted.getTime() - killedAt;
      if (row?.completed) timeline.firstCompletedMs ??= row.completed.getTime() - killedAt;
    } catch {
      // The standby restarts while it is promoted.
    } finally {
      await client.end().catch(() => {});
    }
    await sleep(200);
  }
  return timeline;
}

function seconds(ms: number | null): string {
  return ms === null ? 'never' : `${(ms / 1000).toFixed(1)} s`;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`failover: ${(error as Error).stack ?? String(error)}\n`);
    process.exitCode = 1;
  },
);
