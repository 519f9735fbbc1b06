import type { ChaosCounters } from './chaos.js';
import { checkDatabase } from './checker/index.js';
import { drain, type DrainAccess } from './drain.js';
import { Apis } from './http.js';
import { drainExecutions } from './missions.js';
import type { SoakOptions } from './options.js';
import type { Outside } from './outside.js';
import { approvalTimeoutMs } from './parleyConfig.js';
import { Random } from './random.js';
import { describeViolations, failed, figuresTable, type RunFacts } from './report.js';
import { endedTimes, writeRunReport, type TimelineMark } from './timeline.js';
import { Traffic } from './traffic.js';
import { UserStreamFollower } from './userStream.js';
import { drainReplies, drainWebhooks } from './webhooks.js';

/** How long the clients may still run after the chaos before they count as hung. */
const clientGraceMs = 300_000;

/** What an engine's soak lends the course every run follows. */
export interface Engine {
  /** The API processes' base URLs (a retry goes to the next one). */
  urls: string[];
  /** Runs the engine's chaos schedule; resolves with its counters when it is over. */
  chaos(began: number): Promise<ChaosCounters>;
  /** Every process running again (nothing down or paused), before the drain. */
  ensureUp(): Promise<void>;
  /** How the drain and the checker see the database. */
  access: DrainAccess;
  /** Stops every process with SIGTERM: the pids stopped, and each stop that did not exit 0. */
  stopAll(): Promise<{ stoppedPids: Set<number>; uncleanShutdowns: string[] }>;
  /** Exits nobody asked for, one line each. */
  unexpectedExits(): string[];
  /** Lines of output saying a lease was lost and the turn abandoned. */
  leasesLost(): number;
  /** The timeline's marks: kills, pauses, restarts (seconds from `began`). */
  marks(began: number): TimelineMark[];
  /** How the engine is named in the verdict: `` or ` (PGlite)`. */
  label: string;
  /** The flags that repeat this run. */
  repeat: string;
}

/**
 * The course of a soak run, the same on every engine: the clients (chat sessions,
 * missions, Telegram, Slack) under the engine's chaos; then, with every process up, the
 * drain of executions (schedules stopped), turns, webhook deliveries and platform replies;
 * every process stopped cleanly; the checker over the whole database and what the
 * clients, the receiver and the fake platforms saw; the figures and the report. Returns
 * the exit code.
 */
export async function runCourse(
  options: SoakOptions,
  outside: Outside,
  engine: Engine,
  log: (line: string) => void,
): Promise<number> {
  const began = Date.now();
  const random = new Random(options.seed);
  const traffic = new Traffic(options, engine.urls, outside);
  // The user stream is followed from before the first turn to after the drain.
  const userStream = new UserStreamFollower(
    new Apis(engine.urls),
    traffic.ledger,
    random.fork('user-stream'),
  ).start();
  const ticker = setInterval(() => {
    log(
      `${Math.round((Date.now() - began) / 1000)} s: ${traffic.ledger.turns.size} turns acknowledged, ${traffic.pacer.remaining} to admit`,
    );
  }, 15_000);
  try {
    let chaosMs = 0;
    const chaos = engine.chaos(began).then((counters) => {
      chaosMs = Date.now() - began;
      return counters;
    });
    const clients = traffic.run(random);
    const counters = await chaos;
    // Every client gives up on its own within minutes; one still running well after the
    // chaos is a client that hangs: named, counted as a failure, and not waited for.
    // The grace timer is cleared once the clients are done: left running, it would keep
    // the soak's process alive for the whole grace period after the report.
    let grace: NodeJS.Timeout | undefined;
    const clientsDone = await Promise.race([
      clients.then(() => true),
      new Promise<false>((resolve) => {
        grace = setTimeout(() => resolve(false), clientGraceMs);
      }),
    ]).finally(() => clearTimeout(grace));
    const hungClients = clientsDone ? [] : [...traffic.running];
    if (hungClients.length > 0) {
      log(
        `clients still running ${clientGraceMs / 1000} s after the chaos: ${hungClients.join(', ')}`,
      );
    }
    log(`chaos over after ${Math.round(chaosMs / 1000)} s; clients done; draining`);

    // Every process up again before the drain: nothing may stay paused or down.
    await engine.ensureUp();
    const { access } = engine;
    const seconds = (ms: number) => Math.round(ms / 1000);
    const executionsDrained = await drainExecutions(
      access,
      { apis: new Apis(engine.urls), ledger: traffic.missions },
      random.fork('drain-executions'),
      options.drainTimeoutMs,
    );
    log(
      `drain: ${executionsDrained.open} executions still open after ${seconds(executionsDrained.durationMs)} s`,
    );
    const drained = await drain(
      access,
      new Apis(engine.urls),
      random.fork('drain'),
      options.drainTimeoutMs,
    );
    log(`drain: ${drained.open} turns still open after ${seconds(drained.durationMs)} s`);
    const webhooksDrained = await drainWebhooks(access, options.drainTimeoutMs);
    log(
      `drain: ${webhooksDrained.pending} webhook deliveries (or sessions not yet followed) still pending after ${seconds(webhooksDrained.durationMs)} s`,
    );
    const repliesDrained = await drainReplies(access, options.drainTimeoutMs);
    log(
      `drain: ${repliesDrained.pending} platform replies (or threads not yet folded) still pending after ${seconds(repliesDrained.durationMs)} s`,
    );

    // The embedded drain leaves its server stopped after its last look: what the last
    // window journaled reaches the stream only once a server is up to send it.
    await engine.ensureUp();
    await userStream.finish();
    log(
      `drain: the user stream received ${userStream.record.received.size} events over ${userStream.record.connections} connections`,
    );

    const { stoppedPids, uncleanShutdowns } = await engine.stopAll();
    const { check, ended } = await access.read(async (db) => ({
      check: await checkDatabase(db, traffic.ledger, {
        stoppedPids,
        effects: outside.effects,
        missions: traffic.missions,
        webhooks: outside.webhookEvidence(),
        pushes: outside.pushEvidence(),
        userStream: userStream.record,
        platforms: outside.platformEvidence(),
        questionTimeoutMs: approvalTimeoutMs,
      }),
      ended: await endedTimes(db, began),
    }));
    const unexpectedExits = engine.unexpectedExits();
    const facts: RunFacts = {
      options,
      ledger: traffic.ledger,
      chaos: counters,
      drain: drained,
      missions: { ledger: traffic.missions, drain: executionsDrained },
      check,
      leasesLost: engine.leasesLost(),
      failedAttempts: traffic.failedAttempts,
      unexpectedExits,
      uncleanShutdowns,
      hungClients,
      chaosMs,
      totalMs: Date.now() - began,
    };
    process.stdout.write(`\n${figuresTable(facts)}\n\n`);
    // Where a platform has no idempotency key these are no violations, but never hidden.
    for (const platform of check.platforms) {
      for (const line of platform.details) process.stdout.write(`duplicate: ${line}\n`);
    }
    for (const [name, counters] of platformCounters(outside)) {
      process.stdout.write(`${name}: ${JSON.stringify(counters)}\n`);
    }
    const written = writeRunReport(options.reportDir, facts, {
      marks: engine.marks(began),
      endedS: ended,
      chaosS: chaosMs / 1000,
      totalS: facts.totalMs / 1000,
      title: `npm run soak -- ${engine.repeat}`,
    });
    log(`report: ${written.json}, timeline: ${written.svg}`);
    if (!failed(facts)) {
      log(
        `PASS${engine.label}: nothing lost, doubled, reordered or left unfinished (seed ${options.seed})`,
      );
      return 0;
    }
    process.stdout.write(`${describeViolations(check.findings.violations)}\n`);
    for (const line of drained.stuck) process.stdout.write(`stuck: ${line}\n`);
    for (const line of executionsDrained.stuck) process.stdout.write(`stuck: ${line}\n`);
    for (const line of hungClients) process.stdout.write(`client still running: ${line}\n`);
    for (const line of [...unexpectedExits, ...uncleanShutdowns])
      process.stdout.write(`process: ${line}\n`);
    log(`FAIL (seed ${options.seed}); rerun with: npm run soak -- ${engine.repeat} --keep`);
    return 1;
  } finally {
    clearInterval(ticker);
  }
}

/** What each platform's people went through (retries, double sends, replies waited out). */
function platformCounters(outside: Outside): [string, object][] {
  const found: [string, object][] = [];
  if (outside.telegram) found.push(['telegram', outside.telegram.counters]);
  if (outside.slack) found.push(['slack', outside.slack.counters]);
  return found;
}
