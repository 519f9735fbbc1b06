/**
 * `npm run bench:journal`: the journal's growth at scale, on PostgreSQL. A fresh database,
 * migrated, grows in steps (1%, 10% and 100% of PARLEY_BENCH_JOURNAL_EVENTS journal
 * events) through the documented bulk path (bench/journalBulk.ts). At each size:
 *
 * 1. a real `parley serve` composition (src/cli/start.ts) on the database answers real
 *    turns in bulk sessions (a short one, a 200-turn one) and a new one through HTTP, and
 *    drains what the previous step's timed admissions queued: the bulk rows are read by
 *    the real worker (its prompt history), the real API, and are followed on gaplessly.
 *    At the first size it also leaves pending approvals (the inbox's items) through the
 *    real tool loop;
 * 2. with that process stopped (nothing else writes), the store functions the API and the
 *    worker call are timed, each over PARLEY_BENCH_JOURNAL_RUNS repetitions: admission to
 *    an existing and to a new session, replay from a cursor in a long and a short
 *    session, the approvals inbox and the session list (first and a later page), and one
 *    retention batch of the journal rule and of the whole-session rule (each inside a
 *    transaction that is rolled back, so that every repetition and every size prunes the
 *    same rows and the journal keeps its size);
 * 3. table and index sizes are read.
 *
 * A markdown table goes to stdout, progress to stderr, the figures to
 * bench/results/journal.json and a chart to bench/results/journal.svg. Method and
 * findings: docs/benchmarks.md, "The journal at 1,000,000 events".
 *
 * Environment:
 * - PARLEY_BENCH_DATABASE_URL: a PostgreSQL admin URL (a role that may create databases).
 *   Unset: `bash scripts/ensure-postgres.sh` is asked for one.
 * - PARLEY_BENCH_JOURNAL_EVENTS (default 1000000): the largest size, in journal events.
 * - PARLEY_BENCH_JOURNAL_RUNS (default 30): timed repetitions of each operation (the
 *   retention batches: a third of it), after three untimed ones.
 * - PARLEY_BENCH_JOURNAL_OUT (default bench/results/journal.json): where the figures go;
 *   the chart goes beside it (.svg).
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { startProcess, type Running } from '../src/cli/start.js';
import { compileConfig } from '../src/config/load.js';
import type { Config } from '../src/config/types.js';
import { createLogger } from '../src/log.js';
import { admitTurn, type AdmitTurnInput } from '../src/store/admitTurn.js';
import type { Db } from '../src/store/db.js';
import { listInputs } from '../src/store/listInputs.js';
import { decodeCursor, listSessions } from '../src/store/listSessions.js';
import { migrate } from '../src/store/migrate.js';
import { openPostgres } from '../src/store/postgres.js';
import { noFollowers } from '../src/store/pruneBatches.js';
import { pruneEventsBatch } from '../src/store/pruneEvents.js';
import { pruneSessions } from '../src/store/pruneSessions.js';
import { readEvents } from '../src/store/readEvents.js';
import type { Viewer } from '../src/store/visibility.js';
import {
  bulkAgent,
  eventsOf,
  bulkSessionId,
  eventsBetween,
  growJournal,
  ownerOf,
  sessionsForEvents,
  tenantOf,
  tenants,
  timelineFor,
  turnsOf,
} from './journalBulk.js';
import { logLogChart } from './journalSvg.js';
import { freshDatabase, postgresAdminUrl } from './database.js';
import { formatJson, machineFigures, revision } from './output.js';
import { fmt, median, percentile, round } from './stats.js';

const topEvents = Number(process.env.PARLEY_BENCH_JOURNAL_EVENTS ?? 1_000_000);
const runs = Number(process.env.PARLEY_BENCH_JOURNAL_RUNS ?? 30);
const warmup = 3;
/** The tenant whose inbox and session list are timed: the largest bulk tenant. */
const tenant = 'acme';
/** Pending approvals left for the inbox: two full pages of 50 and part of a third. */
const pendingApprovals = 110;
const inboxPage = 50;
const listPage = 50;
/** What the SSE route reads per page (src/api/events.ts). */
const replayPage = 200;
/** The retention batches: the default `prune_batch_size` for the journal rule. */
const pruneEventsBatchSize = 1000;
const pruneSessionsBatchSize = 100;
/** Everything older than this is old enough to prune: nearly all the bulk journal. */
const pruneAgeDays = 30;

const root = dirname(dirname(fileURLToPath(import.meta.url)));
/** One key per bulk tenant, so that real turns can go to any bulk session. */
const keys = new Map<string, string>(
  tenants.map((name) => [name, randomBytes(16).toString('hex')]),
);
const keyEnv = (name: string) => `PARLEY_JOURNAL_BENCH_KEY_${name.toUpperCase()}`;

function progress(text: string): void {
  process.stderr.write(`bench:journal: ${text}\n`);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function benchConfig(url: string, dataDir: string): Config {
  return compileConfig(
    {
      server: { host: '127.0.0.1', port: 0 },
      storage: { url, data_dir: dataDir },
      auth: {
        keys: tenants.map((name) => ({
          key_env: keyEnv(name),
          tenant: name,
          user: 'bench',
          roles: ['lead'],
        })),
      },
      providers: { demo: { kind: 'demo' } },
      agents: {
        [bulkAgent]: {
          model: 'demo/echo',
          tools: { calculator: 'approve' },
          approver_roles: ['lead'],
        },
      },
    },
    {
      PARLEY_DEMO_DELAY_MS: '0',
      ...Object.fromEntries(tenants.map((name) => [keyEnv(name), keys.get(name) as string])),
    },
    'bench:journal',
  );
}

async function api(
  base: string,
  as: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: any }> {
  const response = await fetch(new URL(path, base), {
    method,
    headers: {
      authorization: `Bearer ${keys.get(as) ?? ''}`,
      'parley-protocol-version': '1',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? null : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

async function until(what: string, check: () => Promise<boolean>, limitMs = 180_000) {
  const deadline = Date.now() + limitMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** The first session with `turns` turns from `from`, else from 0 (a small first step). */
function sessionWith(turns: number, from: number, to: number): number {
  for (let i = from; i < to; i++) if (turnsOf(i) === turns) return i;
  for (let i = 0; i < to; i++) if (turnsOf(i) === turns) return i;
  throw new Error(`no session of ${turns} turns below ${to}`);
}

/** The longest sessions' turns among the first `sessions`: 200 once there are 51. */
function longestTurns(sessions: number): number {
  let longest = 0;
  for (let i = 0; i < sessions; i++) longest = Math.max(longest, turnsOf(i));
  return longest;
}

const isShort = (turns: number) => turns <= 6;

interface RealTurns {
  turns: number;
  /** The prompt's input tokens of the real turn in the long bulk session: its history. */
  long_session_input_tokens: number;
  new_session_input_tokens: number;
  pending_approvals: number;
  seconds: number;
}

/**
 * Real turns through the real write path on the bulk journal: a `parley serve` process
 * (API + worker) admits over HTTP and answers with the demo model.
 */
async function realTurns(
  db: Db,
  config: Config,
  range: { from: number; to: number },
  withApprovals: boolean,
  step: number,
): Promise<RealTurns> {
  const started = performance.now();
  const running: Running = await startProcess(
    config,
    { api: true, worker: true },
    createLogger({ level: 'error', destination: process.stderr }),
  );
  try {
    const base = running.url as string;
    if (withApprovals) {
      for (let n = 0; n < pendingApprovals; n++) {
        const admitted = await api(base, tenant, 'POST', '/api/v1/chat/turns', {
          turn_id: `approval-${n}`,
          message: `/tool calculator {"expression": "${n}*7"}`,
        });
        if (admitted.status !== 202) throw new Error(`approval admission: ${admitted.status}`);
      }
    }
    const long = sessionWith(longestTurns(range.to), range.from, range.to);
    const short = sessionWith(1, range.from, range.to);
    const targets: [string | null, string][] = [
      [bulkSessionId(long), tenantOf(long)],
      [bulkSessionId(short), tenantOf(short)],
      [null, tenant],
    ];
    const asTenant: string[] = [];
    const turnIds: string[] = [];
    const sessions: string[] = [];
    for (const [index, [sessionId, as]] of targets.entries()) {
      const turnId = `real-${step}-${index}`;
      asTenant.push(as);
      const admitted = await api(base, as, 'POST', '/api/v1/chat/turns', {
        ...(sessionId === null ? {} : { session_id: sessionId }),
        turn_id: turnId,
        message: `real turn ${index} at step ${step}`,
      });
      if (admitted.status !== 202) {
        throw new Error(`real admission: ${admitted.status} ${JSON.stringify(admitted.body)}`);
      }
      turnIds.push(turnId);
      sessions.push(admitted.body.session_id as string);
    }
    // Every turn answered, this step's and those the previous step's timing queued, except
    // the approvals, which wait for a person.
    await until('the real turns', async () => {
      const open = await db.query<{ open: number; pending: number }>(
        `select (select count(*)::int from turns t join sessions s on s.session_id = t.session_id
                  where t.state in ('queued', 'running') and s.state <> 'input_required') as open,
                (select count(*)::int from input_requests where state = 'pending') as pending`,
      );
      const row = open.rows[0] as { open: number; pending: number };
      return row.open === 0 && (!withApprovals || row.pending === pendingApprovals);
    });
    const tokens: number[] = [];
    for (const [index, sessionId] of sessions.entries()) {
      const turnId = turnIds[index] as string;
      const journal = await readEvents(db, sessionId, 0, 100_000);
      const done = journal.find(
        (event) => event.type === 'done' && (event as any).turn_ids.includes(turnId),
      ) as any;
      if (done?.final_message?.content !== `You said: real turn ${index} at step ${step}`) {
        throw new Error(`real turn ${turnId}: no done with its reply`);
      }
      const usage = journal.find(
        (event) => event.type === 'usage' && event.turn_id === turnId,
      ) as any;
      tokens.push(Number(usage?.input_tokens ?? 0));
      const sequences = journal.map((event) => event.sequence);
      const projection = await api(
        base,
        asTenant[index] as string,
        'GET',
        `/api/v1/chat/sessions/${sessionId}`,
      );
      if (
        projection.status !== 200 ||
        sequences.some((sequence, at) => sequence !== at + 1) ||
        projection.body.latest_sequence !== sequences.length
      ) {
        throw new Error(`session ${sessionId}: the journal is not gapless up to last_sequence`);
      }
    }
    const pending = await db.query<{ n: number }>(
      `select count(*)::int as n from input_requests where state = 'pending'`,
    );
    if ((tokens[0] as number) <= (tokens[2] as number)) {
      throw new Error(
        'the long bulk session added nothing to the prompt: its history was not read',
      );
    }
    return {
      turns: turnIds.length,
      long_session_input_tokens: tokens[0] as number,
      new_session_input_tokens: tokens[2] as number,
      pending_approvals: pending.rows[0]?.n ?? 0,
      seconds: round((performance.now() - started) / 1000, 1),
    };
  } finally {
    await running.stop();
  }
}

interface Timing {
  p50_ms: number;
  p95_ms: number;
  runs: number;
}

async function time(repetitions: number, operation: (n: number) => Promise<void>): Promise<Timing> {
  const samples: number[] = [];
  for (let n = 0; n < warmup + repetitions; n++) {
    const started = performance.now();
    await operation(n);
    if (n >= warmup) samples.push(performance.now() - started);
  }
  return {
    p50_ms: round(median(samples)),
    p95_ms: round(percentile(samples, 95)),
    runs: samples.length,
  };
}

class Rollback extends Error {}

/** Runs `work` in a transaction that is rolled back, with the rows it returned. */
async function rolledBack(db: Db, work: Parameters<Db['transaction']>[0]): Promise<unknown> {
  let outcome: unknown = null;
  try {
    await db.transaction(async (tx) => {
      outcome = await work(tx);
      throw new Rollback();
    });
  } catch (error) {
    if (!(error instanceof Rollback)) throw error;
  }
  return outcome;
}

const operations = [
  ['admit, existing session', 'admit_existing'],
  ['admit, new session', 'admit_new'],
  [`replay ${replayPage} after the middle, long session`, 'replay_long'],
  ['replay from 0, short session', 'replay_short'],
  [`inbox, first page (${inboxPage})`, 'inbox_first'],
  ['inbox, later page', 'inbox_later'],
  [`session list, first page (${listPage})`, 'sessions_first'],
  ['session list, page at the middle', 'sessions_middle'],
  [`prune events, one batch (${pruneEventsBatchSize})`, 'prune_events'],
  [`prune sessions, one batch (${pruneSessionsBatchSize})`, 'prune_sessions'],
] as const;

type Operation = (typeof operations)[number][1];

async function timeOperations(
  db: Db,
  sessions: number,
  step: number,
): Promise<{
  timings: Record<Operation, Timing>;
  pruned: { events_batch: Record<string, number>; sessions_batch: Record<string, number> };
}> {
  const pick = (n: number, accept: (i: number) => boolean) => {
    // Spread over the whole journal, deterministic per repetition.
    for (let i = (n * 7919 + step * 104_729) % sessions; ; i = (i + 1) % sessions) {
      if (accept(i)) return i;
    }
  };
  const admission = (n: number, sessionIndex: number | null): AdmitTurnInput => ({
    tenant: sessionIndex === null ? tenant : tenantOf(sessionIndex),
    author: sessionIndex === null ? 'bench' : ownerOf(sessionIndex),
    viewer: {
      user: sessionIndex === null ? 'bench' : ownerOf(sessionIndex),
      roles: [],
      admin: false,
      approverOf: [],
    },
    turnId: `timed-${step}-${sessionIndex ?? 'new'}-${n}-${randomBytes(3).toString('hex')}`,
    sessionId: sessionIndex === null ? null : bulkSessionId(sessionIndex),
    agent: null,
    defaultAgent: bulkAgent,
    greetings: new Map([[bulkAgent, null]]),
    visibilities: new Map([[bulkAgent, 'tenant']]),
    message: 'one more question about the retry policy',
    option: null,
    attachments: [],
    triggers: new Map([[bulkAgent, true]]),
    pendingInput: new Map([[bulkAgent, 'supersede']]),
  });
  const approver: Viewer = {
    user: 'bench',
    roles: ['lead'],
    admin: false,
    approverOf: [bulkAgent],
  };
  const member: Viewer = { user: 'user-5', roles: [], admin: false, approverOf: [] };
  const inboxOptions = {
    hiddenAgents: [],
    user: 'bench',
    roles: ['lead'],
    limit: inboxPage,
  };
  const firstInbox = await listInputs(db, tenant, approver, { ...inboxOptions, cursor: null });
  const inboxCursor = decodeCursor(firstInbox.next_cursor ?? '') as [number, string] | null;
  if (!inboxCursor) throw new Error('the inbox has a single page: no later page to time');
  const middle = (
    await db.query<{ updated_at: Date; session_id: string }>(
      `select updated_at, session_id from sessions where tenant = $1
        order by updated_at desc, session_id desc
       offset (select count(*) / 2 from sessions where tenant = $1) limit 1`,
      [tenant],
    )
  ).rows[0] as { updated_at: Date; session_id: string };
  const olderThan = new Date(Date.now() - pruneAgeDays * 24 * 3600_000);
  const results = {} as Record<Operation, Timing>;
  const longest = longestTurns(sessions);
  const plans: Record<Operation, [number, (n: number) => Promise<unknown>]> = {
    admit_existing: [
      runs,
      (n) =>
        admitTurn(
          db,
          admission(
            n,
            pick(n, (i) => isShort(turnsOf(i))),
          ),
        ),
    ],
    admit_new: [runs, (n) => admitTurn(db, admission(n, null))],
    replay_long: [
      runs,
      (n) => {
        const i = pick(n, (j) => turnsOf(j) === longest);
        return readEvents(db, bulkSessionId(i), Math.floor(eventsOf(longest) / 2), replayPage);
      },
    ],
    replay_short: [
      runs,
      (n) => readEvents(db, bulkSessionId(pick(n, (i) => isShort(turnsOf(i)))), 0, replayPage),
    ],
    inbox_first: [runs, () => listInputs(db, tenant, approver, { ...inboxOptions, cursor: null })],
    inbox_later: [
      runs,
      () =>
        listInputs(db, tenant, approver, {
          ...inboxOptions,
          cursor: { priority: inboxCursor[0], requestId: inboxCursor[1] },
        }),
    ],
    sessions_first: [
      runs,
      () => listSessions(db, tenant, member, { limit: listPage, cursor: null }),
    ],
    sessions_middle: [
      runs,
      () =>
        listSessions(db, tenant, member, {
          limit: listPage,
          cursor: { updatedAt: middle.updated_at.toISOString(), sessionId: middle.session_id },
        }),
    ],
    prune_events: [
      Math.max(1, Math.round(runs / 3)),
      () =>
        rolledBack(db, (tx) =>
          pruneEventsBatch(tx, {
            olderThan,
            tenant: null,
            batchSize: pruneEventsBatchSize,
            followers: noFollowers,
          }),
        ),
    ],
    prune_sessions: [
      Math.max(1, Math.round(runs / 3)),
      () =>
        rolledBack(db, (tx) =>
          pruneSessions(tx, {
            olderThan,
            tenant: null,
            batchSize: pruneSessionsBatchSize,
            followers: noFollowers,
          }),
        ),
    ],
  };
  for (const [label, operation] of operations) {
    const [repetitions, run] = plans[operation];
    results[operation] = await time(repetitions, async (n) => {
      await run(n);
    });
    progress(`  ${label}: p50 ${fmt(results[operation].p50_ms)} ms`);
  }
  // What one batch of each retention rule removes (the same rows every repetition): they
  // must have had something to remove, or they timed nothing.
  const prunedEvents = (await rolledBack(db, (tx) =>
    pruneEventsBatch(tx, {
      olderThan,
      tenant: null,
      batchSize: pruneEventsBatchSize,
      followers: noFollowers,
    }),
  )) as { removed: Record<string, number> };
  const prunedSessions = (await rolledBack(db, (tx) =>
    pruneSessions(tx, {
      olderThan,
      tenant: null,
      batchSize: pruneSessionsBatchSize,
      followers: noFollowers,
    }),
  )) as { removed: Record<string, number> };
  if (!(prunedEvents.removed.events ?? 0) || !(prunedSessions.removed.sessions ?? 0)) {
    throw new Error('a retention batch had nothing to remove');
  }
  return {
    timings: results,
    pruned: {
      events_batch: prunedEvents.removed,
      sessions_batch: Object.fromEntries(
        Object.entries(prunedSessions.removed).filter(([, count]) => count > 0),
      ),
    },
  };
}

const journalTables = ['sessions', 'turns', 'messages', 'events', 'usage'] as const;

async function sizes(db: Db) {
  const tables = await db.query<{
    name: string;
    rows: number;
    table_bytes: number;
    index_bytes: number;
    total_bytes: number;
  }>(
    `select c.relname as name, c.reltuples::bigint as rows,
            pg_table_size(c.oid) as table_bytes, pg_indexes_size(c.oid) as index_bytes,
            pg_total_relation_size(c.oid) as total_bytes
       from pg_class c
      where c.relkind = 'r' and c.relnamespace = 'public'::regnamespace
        and c.relname = any($1::text[])
      order by c.relname`,
    [journalTables],
  );
  const indexes = await db.query<{ table: string; name: string; bytes: number }>(
    `select relname as table, indexrelname as name, pg_relation_size(indexrelid) as bytes
       from pg_stat_user_indexes where relname = any($1::text[])
      order by relname, indexrelname`,
    [journalTables],
  );
  return { tables: tables.rows, indexes: indexes.rows };
}

interface Step {
  events: number;
  sessions: number;
  bulk_seconds: number;
  real_turns: RealTurns;
  timings: Record<Operation, Timing>;
  /** Rows one (rolled back) batch of each retention rule removes. */
  pruned: { events_batch: Record<string, number>; sessions_batch: Record<string, number> };
  sizes: Awaited<ReturnType<typeof sizes>>;
}

const mb = (bytes: number) => `${fmt(bytes / 2 ** 20)} MB`;

function table(steps: Step[]): string {
  const header = `| operation (ms, p50 / p95) | ${steps.map((s) => `${s.events.toLocaleString('en-US')} events`).join(' | ')} | top / bottom p50 |`;
  const rule = `| --- | ${steps.map(() => '---').join(' | ')} | --- |`;
  const rows = operations.map(([label, operation]) => {
    const first = steps[0]?.timings[operation].p50_ms ?? Number.NaN;
    const last = steps[steps.length - 1]?.timings[operation].p50_ms ?? Number.NaN;
    return `| ${label} | ${steps
      .map((s) => `${fmt(s.timings[operation].p50_ms)} / ${fmt(s.timings[operation].p95_ms)}`)
      .join(' | ')} | ${fmt(last / first)}× |`;
  });
  const sizeRows = journalTables.map((name) => {
    const cells = steps.map((s) => {
      const found = s.sizes.tables.find((t) => t.name === name);
      return found ? `${mb(found.table_bytes)} + ${mb(found.index_bytes)} idx` : 'n/a';
    });
    return `| \`${name}\` size (table + indexes) | ${cells.join(' | ')} | |`;
  });
  const counts = `| sessions | ${steps.map((s) => s.sessions.toLocaleString('en-US')).join(' | ')} | |`;
  return [header, rule, ...rows, counts, ...sizeRows].join('\n');
}

function chart(steps: Step[]): string {
  return logLogChart(
    operations.map(([label, operation]) => ({
      name: label,
      points: steps.map((s) => ({ x: s.events, y: s.timings[operation].p50_ms })),
    })),
    {
      title: 'Time per operation vs journal size (PostgreSQL, median)',
      x: 'journal events (log)',
      y: 'ms per operation (log)',
    },
  );
}

async function main(): Promise<void> {
  const started = performance.now();
  const loadBefore = loadavg();
  const admin = postgresAdminUrl();
  if ('skipped' in admin) {
    progress(`skipped: ${admin.skipped}`);
    process.exitCode = 1;
    return;
  }
  const database = await freshDatabase(admin.url, 'parley_journal');
  const url = new URL(database.url);
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-journal-'));
  // The bulk path's statements run longer than a request may: no statement timeout there.
  const bulkDb = await openPostgres(url.toString(), 1, { statementTimeoutMs: 0 });
  const db = await openPostgres(url.toString(), 4);
  const dropDatabase = async () => {
    await bulkDb.close().catch(() => {});
    await db.close().catch(() => {});
    rmSync(dataDir, { recursive: true, force: true });
    await database.drop();
  };
  const interrupted = () => {
    void dropDatabase().finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  try {
    await migrate(bulkDb);
    const config = benchConfig(url.toString(), dataDir);
    const targets = [topEvents / 100, topEvents / 10, topEvents].map(Math.round);
    const plan = targets.map(sessionsForEvents);
    const timeline = timelineFor(plan[plan.length - 1] as number);
    const steps: Step[] = [];
    let grown = 0;
    for (const [index, sessions] of plan.entries()) {
      const bulkStarted = performance.now();
      await growJournal(bulkDb, grown, sessions, timeline);
      // What autovacuum does after a load: fresh statistics for the planner.
      await bulkDb.query(`analyze ${journalTables.join(', ')}`);
      const bulkSeconds = round((performance.now() - bulkStarted) / 1000, 1);
      const events = eventsBetween(0, sessions);
      progress(
        `${events.toLocaleString('en-US')} bulk events in ${sessions.toLocaleString('en-US')} sessions (+${bulkSeconds} s)`,
      );
      const real = await realTurns(db, config, { from: grown, to: sessions }, index === 0, index);
      progress(
        `  real turns: ${real.turns} (+ the queued ones) in ${real.seconds} s; long session's prompt ${real.long_session_input_tokens} tokens`,
      );
      const { timings, pruned } = await timeOperations(db, sessions, index);
      const measured = await sizes(db);
      const journalEvents = (await db.query<{ n: number }>('select count(*)::int as n from events'))
        .rows[0]?.n;
      steps.push({
        events: journalEvents ?? events,
        sessions,
        bulk_seconds: bulkSeconds,
        real_turns: real,
        timings,
        pruned,
        sizes: measured,
      });
      grown = sessions;
    }
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    const report = {
      date: new Date().toISOString(),
      revision: revision(root),
      machine: machineFigures(loadBefore),
      versions: {
        parley: pkg.version,
        pg: pkg.dependencies.pg,
        postgres:
          (await db.query<{ v: string }>("select current_setting('server_version') as v")).rows[0]
            ?.v ?? null,
      },
      method: {
        top_events: topEvents,
        runs,
        warmup,
        tenant,
        pending_approvals: pendingApprovals,
        replay_page: replayPage,
        inbox_page: inboxPage,
        list_page: listPage,
        prune_events_batch: pruneEventsBatchSize,
        prune_sessions_batch: pruneSessionsBatchSize,
        prune_age_days: pruneAgeDays,
        bulk_path: 'bench/journalBulk.ts',
      },
      total_seconds: round((performance.now() - started) / 1000, 1),
      steps,
    };
    const out =
      process.env.PARLEY_BENCH_JOURNAL_OUT ?? join(root, 'bench', 'results', 'journal.json');
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, await formatJson(out, report));
    const svg = out.replace(/\.json$/, '') + '.svg';
    writeFileSync(svg, chart(steps));
    process.stdout.write(
      `\nParley journal benchmark — PostgreSQL ${report.versions.postgres}, ${report.machine.cpus} CPUs, ${runs} runs each (retention batches ${Math.max(1, Math.round(runs / 3))}); load average ${report.machine.load_average_1m_before} before, ${report.machine.load_average_1m_after} after\n\n`,
    );
    process.stdout.write(`${table(steps)}\n\n`);
    process.stdout.write(
      `total ${fmt(report.total_seconds)} s; figures in ${out}, chart in ${svg}; method in docs/benchmarks.md\n`,
    );
  } finally {
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
    await dropDatabase();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(
    `bench:journal failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exitCode = 1;
});
