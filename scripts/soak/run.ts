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
import { checkDatabase } from './checker/index.js';
import { childEnvironment, migrate } from './children.js';
import { drain } from './drain.js';
import { runEmbedded } from './embedded.js';
import {
  EffectLedger,
  effectToolsConfig,
  startEffectServer,
  type EffectServer,
} from './effects.js';
import { Apis } from './http.js';
import { Ledger } from './ledger.js';
import { MissionLedger } from './missionLedger.js';
import { drainExecutions, runMissionClient } from './missions.js';
import { OptionsError, parseOptions, usage, type SoakOptions } from './options.js';
import { Pacer } from './pacer.js';
import { leaseTtlMs, writeParleyConfig } from './parleyConfig.js';
import { freePort, PrivateCluster } from './postgres.js';
import { Slot } from './processes.js';
import { Random } from './random.js';
import { describeViolations, failed, figuresTable } from './report.js';
import { planChaos } from './schedule.js';
import { SessionLoop } from './session.js';
import { TelegramTraffic } from './platforms.js';
import {
  drainReplies,
  drainWebhooks,
  WebhookReceiver,
  webhookConfig,
  webhookEvents,
} from './webhooks.js';
import { endedTimes, slotMarks, writeRunReport, type TimelineMark } from './timeline.js';

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
  const receiver = await new WebhookReceiver(new Random(options.seed).fork('webhooks')).start();
  const telegram = await TelegramTraffic.start();
  let cluster: PrivateCluster | null = null;
  let db: Db | null = null;
  let effectServer: EffectServer | null = null;
  const effects = new EffectLedger();
  const abort = () => {
    for (const slot of slots) void slot.close();
    void effectServer?.close();
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
    effectServer = await startEffectServer(effects);
    const env = childEnvironment({
      DATABASE_URL: cluster.url,
      PARLEY_CONFIG: writeParleyConfig(directory, effectToolsConfig(effectServer.url), {
        webhooks: webhookConfig(receiver.url, 'SOAK_WEBHOOK_SECRET'),
        adapters: telegram.config(),
      }),
      ...telegram.env(),
      SOAK_WEBHOOK_SECRET: receiver.secret,
      PARLEY_HOST: '127.0.0.1',
      PARLEY_DEMO_DELAY_MS: String(options.demoDelayMs),
      PARLEY_LOG_LEVEL: 'warn',
    });
    await migrate(env);
    const environment = { root, logDir, env };
    const apis = [0, 1].map(async (index) => new Slot('api', index, await freePort(), environment));
    slots.push(...(await Promise.all(apis)));
    for (const index of [0, 1, 2]) {
      slots.push(new Slot('worker', index, null, environment, { leaseLost: /lease lost/ }));
    }
    await Promise.all(slots.map((slot) => slot.start()));
    log(`started ${slots.map((slot) => `${slot.name} (pid ${slot.pid})`).join(', ')}`);
    db = await openPostgres(cluster.url, 3);
    return await soak(options, cluster, db, slots, effects, receiver, telegram);
  } finally {
    process.removeListener('SIGINT', abort);
    process.removeListener('SIGTERM', abort);
    for (const slot of slots) await slot.close();
    await db?.close().catch(() => {});
    await effectServer?.close();
    await cluster?.stop();
    await receiver.close();
    await telegram.close();
    if (options.keep) log(`kept ${directory} (PostgreSQL data, process logs)`);
    else rmSync(directory, { recursive: true, force: true });
  }
}

async function soak(
  options: SoakOptions,
  cluster: PrivateCluster,
  db: Db,
  slots: Slot[],
  effects: EffectLedger,
  receiver: WebhookReceiver,
  telegram: TelegramTraffic,
): Promise<number> {
  const began = Date.now();
  const random = new Random(options.seed);
  const workers = slots.filter((slot) => slot.role === 'worker');
  const apiSlots = slots.filter((slot) => slot.role === 'api');
  const urls = apiSlots.map((slot) => slot.url as string);
  const ledger = new Ledger();
  const missionLedger = new MissionLedger();
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

  const pacer = new Pacer(options.turns, options.durationMs * 0.85);
  const clientApis = Array.from({ length: options.clients }, (_, index) => {
    const apis = new Apis(urls);
    for (let skip = 0; skip < index; skip++) apis.pick(); // clients start on different APIs
    return apis;
  });
  const loops = Array.from({ length: options.sessions }, (_, index) => {
    const client = index % options.clients;
    return new SessionLoop(
      { apis: clientApis[client] as Apis, ledger, pacer, followTimeoutMs: 90_000 },
      random.fork(`session-${index}`),
      `c${client}s${index}`,
    );
  });
  const ticker = setInterval(() => {
    log(
      `${Math.round((Date.now() - began) / 1000)} s: ${ledger.turns.size} turns acknowledged, ${pacer.remaining} to admit`,
    );
  }, 15_000);
  let chaosMs = 0;
  const postgresMarks: TimelineMark[] = [];
  try {
    const chaos = runChaos(actions, {
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
    }).then((counters) => {
      chaosMs = Date.now() - began;
      return counters;
    });
    const missionClient = runMissionClient({
      apis: new Apis(urls),
      ledger: missionLedger,
      random: random.fork('missions'),
      count: executionsFor(options),
      windowMs: options.durationMs * 0.85,
      followTimeoutMs: 90_000,
    });
    const [counters] = await Promise.all([
      chaos,
      Promise.all(loops.map((loop) => loop.run())),
      missionClient,
      options.withoutPlatforms
        ? Promise.resolve()
        : telegram.run(
            urls,
            random.fork('telegram'),
            Math.max(2, Math.round(options.sessions / 5)),
            Math.max(3, Math.round(options.turns / 60)),
            options.durationMs * 0.85,
          ),
    ]);
    log(`chaos over after ${Math.round(chaosMs / 1000)} s; clients done; draining`);

    // Every process up again before the drain: nothing may stay paused or down.
    for (const slot of slots) await slot.ensureUp();
    const executionsDrained = await drainExecutions(
      db,
      { apis: new Apis(urls), ledger: missionLedger },
      random.fork('drain-executions'),
      options.drainTimeoutMs,
    );
    log(
      `drain: ${executionsDrained.open} executions still open after ${Math.round(executionsDrained.durationMs / 1000)} s`,
    );
    const drained = await drain(db, new Apis(urls), random.fork('drain'), options.drainTimeoutMs);
    log(`drain: ${drained.open} turns still open after ${Math.round(drained.durationMs / 1000)} s`);
    const webhooksDrained = await drainWebhooks(
      db,
      options.drainTimeoutMs,
      random.fork('drain-webhooks'),
    );
    log(
      `drain: ${webhooksDrained.pending} webhook deliveries still pending after ${Math.round(webhooksDrained.durationMs / 1000)} s`,
    );

    const repliesDrained = await drainReplies(
      db,
      options.drainTimeoutMs,
      random.fork('drain-replies'),
    );
    log(
      `drain: ${repliesDrained.pending} platform replies still pending after ${Math.round(repliesDrained.durationMs / 1000)} s`,
    );

    const uncleanShutdowns: string[] = [];
    const stoppedPids = new Set<number>();
    for (const slot of slots) {
      await slot.ensureUp();
      if (slot.pid !== null) stoppedPids.add(slot.pid);
      const exit = await slot.terminate();
      if (exit.code !== 0)
        uncleanShutdowns.push(`${slot.name}: code ${exit.code} signal ${exit.signal}`);
    }
    const check = await checkDatabase(db, ledger, {
      stoppedPids,
      effects,
      missions: missionLedger,
      webhooks: {
        webhook: 'soak',
        events: webhookEvents,
        receipts: receiver.receipts,
        invalid: receiver.invalid,
      },
      ...(options.withoutPlatforms
        ? {}
        : {
            platform: {
              platform: 'telegram',
              updates: telegram.updates,
              repliesTo: (update) => telegram.repliesTo(update),
            },
          }),
    });
    const unexpectedExits = slots.flatMap((slot) =>
      slot.unexpectedExits.map((exit) => `${slot.name}: code ${exit.code} signal ${exit.signal}`),
    );
    const facts = {
      options,
      ledger,
      chaos: counters,
      drain: drained,
      missions: { ledger: missionLedger, drain: executionsDrained },
      check,
      leasesLost: workers.reduce((sum, slot) => sum + (slot.counts.get('leaseLost') ?? 0), 0),
      failedAttempts: clientApis.reduce((sum, apis) => sum + apis.failures, 0),
      unexpectedExits,
      uncleanShutdowns,
      chaosMs,
      totalMs: Date.now() - began,
    };
    process.stdout.write(`\n${figuresTable(facts)}\n\n`);
    // Not violations (Telegram has no idempotency key), but never hidden.
    for (const line of check.platform?.details ?? []) process.stdout.write(`duplicate: ${line}\n`);
    const written = writeRunReport(options.reportDir, facts, {
      marks: [...slotMarks(slots, began), ...postgresMarks],
      endedS: await endedTimes(db, began),
      chaosS: chaosMs / 1000,
      totalS: facts.totalMs / 1000,
      title: `npm run soak -- ${repeatFlags(options)}`,
    });
    log(`report: ${written.json}, timeline: ${written.svg}`);
    if (!failed(facts)) {
      log(`PASS: nothing lost, doubled, reordered or left unfinished (seed ${options.seed})`);
      return 0;
    }
    process.stdout.write(`${describeViolations(check.findings.violations)}\n`);
    for (const line of drained.stuck) process.stdout.write(`stuck: ${line}\n`);
    for (const line of executionsDrained.stuck) process.stdout.write(`stuck: ${line}\n`);
    for (const line of [...unexpectedExits, ...uncleanShutdowns])
      process.stdout.write(`process: ${line}\n`);
    log(`FAIL (seed ${options.seed}); rerun with: npm run soak -- ${repeatFlags(options)} --keep`);
    return 1;
  } finally {
    clearInterval(ticker);
  }
}

/** Executions the mission client dispatches: one for every ten turns, at least four. */
function executionsFor(options: SoakOptions): number {
  return Math.max(4, Math.round(options.turns / 10));
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
