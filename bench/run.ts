/**
 * `npm run bench`: Parley's performance figures on PGlite and on PostgreSQL, over real
 * HTTP on 127.0.0.1. This process is the client; the server (`parley serve`'s parts,
 * instrumented: bench/server.ts) runs in a child process (bench/child.ts, driven through
 * bench/remote.ts). What each figure means and how it is measured: docs/benchmarks.md.
 * The table goes to stdout, progress to stderr, raw results to bench/results/latest.json.
 *
 * Environment:
 * - PARLEY_BENCH_DATABASE_URL: a PostgreSQL admin URL (a role that may create databases).
 *   Unset: `bash scripts/ensure-postgres.sh` is asked for one; if it has none, the
 *   PostgreSQL part is skipped.
 * - PARLEY_BENCH_RUNS (default 3): repetitions of every measurement; medians are reported.
 * - PARLEY_BENCH_ENGINES (default "pglite,postgres").
 * - PARLEY_BENCH_OUT (default bench/results/latest.json): where the raw results go.
 * - PARLEY_BENCH_REVISION: the revision to record, when not measuring a git checkout.
 * - PARLEY_BENCH_PG_SYNCHRONOUS_COMMIT (diagnosis only, e.g. "off"): set on the fresh
 *   PostgreSQL database, to separate the disk's fsync cost from Parley's own cost.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { closeClient, requestJson, SseStream, type Frame } from './http.js';
import { now, RemoteServer } from './remote.js';
import type { CounterSnapshot } from './server.js';
import { fmt, median, percentile, round } from './stats.js';
import {
  medianOf,
  peerPlan,
  peerReplyText,
  peerShapedLoad,
  peerShapedRun,
  peerWarmUp,
  runPeerOnce,
} from './peer.js';
import { measureReplyBytes } from './replyBytes.js';
import { measureProviderPath, PacedProvider } from './providerPath.js';
import { measureToolLoop } from './toolLoop.js';
import { benchMissions, missionsTable, type MissionsFigures } from './missions.js';
import { freshDatabase, postgresAdminUrl, type FreshDatabase } from './database.js';
import { formatJson, machineFigures, revision, writeBenchCharts } from './output.js';

const runs = Number(process.env.PARLEY_BENCH_RUNS ?? 3);
const engines = (process.env.PARLEY_BENCH_ENGINES ?? 'pglite,postgres').split(',');
/** Diagnosis only: `off` takes the disk's fsync out of PostgreSQL commits (not durable). */
const synchronousCommit = (() => {
  const value = process.env.PARLEY_BENCH_PG_SYNCHRONOUS_COMMIT;
  if (value === undefined || value === '') return null;
  if (!['on', 'off', 'local', 'remote_write', 'remote_apply'].includes(value)) {
    throw new Error(
      'PARLEY_BENCH_PG_SYNCHRONOUS_COMMIT: on, off, local, remote_write or remote_apply',
    );
  }
  return value;
})();

const plan = {
  admissionsPerRun: 300,
  admissionsPerRunWithWorker: 200,
  admissionWarmup: 50,
  admissionSessions: 8,
  concurrentSessions: 8,
  turnsPerSession: 20,
  firstDeltaTurns: 30,
  slowModelDelayMs: 5,
  slowModelTurns: 10,
  historyLevels: [1, 50, 200],
  historyMeasuredTurns: 10,
};

const tables = ['sessions', 'turns', 'messages', 'events'] as const;

function progress(text: string): void {
  process.stderr.write(`bench: ${text}\n`);
}

// ---------------------------------------------------------------------------------------
// Client-side helpers

let turnCounter = 0;
function newTurnId(): string {
  turnCounter += 1;
  return `t${turnCounter}_${randomBytes(4).toString('hex')}`;
}

/** About 17 words; the demo model echoes it, so the reply is "You said: " + the same. */
function messageFor(turnId: string): string {
  return `bench:${turnId} please summarise how the worker retries a failed provider call and what the operator sees`;
}

async function createSession(server: RemoteServer): Promise<string> {
  const response = await requestJson(server.url, 'POST', '/api/v1/chat/sessions', {});
  if (response.status !== 201) throw new Error(`create session: ${response.status}`);
  return response.body.session_id as string;
}

async function admit(server: RemoteServer, sessionId: string, turnId: string): Promise<void> {
  const response = await requestJson(server.url, 'POST', '/api/v1/chat/turns', {
    session_id: sessionId,
    turn_id: turnId,
    message: messageFor(turnId),
  });
  if (response.status !== 202) {
    throw new Error(`admission answered ${response.status}: ${JSON.stringify(response.body)}`);
  }
}

interface TurnTiming {
  turnId: string;
  /** Index into the stream's frames before the admission was sent. */
  mark: number;
  sent: number;
  admitted: number;
  done: number;
}

const endsTurn = (turnId: string) => (frame: Frame) =>
  (frame.event === 'done' || frame.event === 'error' || frame.event === 'cancelled') &&
  Array.isArray(frame.data.turn_ids) &&
  frame.data.turn_ids.includes(turnId);

/** One turn as a client does it: admit, then wait on the open SSE stream for its `done`. */
async function runTurn(
  server: RemoteServer,
  sse: SseStream,
  sessionId: string,
): Promise<TurnTiming> {
  const turnId = newTurnId();
  const mark = sse.frames.length;
  const sent = now();
  await admit(server, sessionId, turnId);
  const admitted = now();
  let end: Frame;
  try {
    end = await sse.waitFor(endsTurn(turnId), mark);
  } catch (error) {
    throw new Error(
      `${(error as Error).message}: ${await describeStuck(server, sessionId, sse, mark)}`,
    );
  }
  if (end.event !== 'done')
    throw new Error(`turn ${turnId} ended with ${JSON.stringify(end.data)}`);
  return { turnId, mark, sent, admitted, done: end.receivedAt };
}

/** What the store and the stream show for a turn that never ended: for the error message. */
async function describeStuck(
  server: RemoteServer,
  sessionId: string,
  sse: SseStream,
  mark: number,
): Promise<string> {
  try {
    const session = await server.query(
      `select state, last_sequence, input_count, input_cursor, lease_owner, lease_expires_at,
              claim_count, attempt, current_turn_id
         from sessions where session_id = $1`,
      [sessionId],
    );
    const events = await server.query(
      `select sequence, type, turn_id from events where session_id = $1
        order by sequence desc limit 8`,
      [sessionId],
    );
    const seen = sse.frames.slice(mark).map((f) => `${f.id ?? '-'}:${f.event}`);
    return JSON.stringify({ session: session[0], journal_tail: events.reverse(), stream: seen });
  } catch (error) {
    return `(could not inspect: ${String(error)})`;
  }
}

/** Until no session has pending input or a lease: the worker has caught up. */
async function waitDrained(server: RemoteServer, timeoutMs = 120_000): Promise<void> {
  const deadline = now() + timeoutMs;
  for (;;) {
    const found = await server.query<{ n: number }>(
      `select count(*) as n from sessions where input_count > input_cursor or lease_token is not null`,
    );
    if (found[0]?.n === 0) return;
    if (now() > deadline) throw new Error('the worker did not drain in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Lets the worker finish what follows a turn's `done` (releasing the lease, the next empty
 * claim) so that statement counts of a window belong to that window's turns.
 */
async function settle(server: RemoteServer): Promise<void> {
  await waitDrained(server);
  await new Promise((resolve) => setTimeout(resolve, 30));
}

function perTurn(before: CounterSnapshot, after: CounterSnapshot, turns: number) {
  const statements: Record<string, number> = {};
  for (const [key, count] of after.byStatement) {
    const delta = count - (before.byStatement.get(key) ?? 0);
    if (delta > 0) statements[key] = round(delta / turns, 2);
  }
  const sorted = Object.fromEntries(Object.entries(statements).sort((a, b) => b[1] - a[1]));
  return {
    queries: (after.queries - before.queries) / turns,
    transactions: (after.transactions - before.transactions) / turns,
    roundTrips: (after.roundTrips - before.roundTrips) / turns,
    commits: (after.commits - before.commits) / turns,
    statements: sorted,
  };
}

// ---------------------------------------------------------------------------------------
// 1. Admission latency

async function admissionRuns(server: RemoteServer, sessions: string[], perRun: number) {
  let next = 0;
  const once = async () => {
    const sessionId = sessions[next++ % sessions.length] as string;
    const started = now();
    await admit(server, sessionId, newTurnId());
    return now() - started;
  };
  for (let i = 0; i < plan.admissionWarmup; i++) await once();
  const results = [];
  for (let run = 0; run < runs; run++) {
    const latencies: number[] = [];
    for (let i = 0; i < perRun; i++) latencies.push(await once());
    results.push({
      p50_ms: round(percentile(latencies, 50)),
      p99_ms: round(percentile(latencies, 99)),
      max_ms: round(Math.max(...latencies)),
    });
  }
  return {
    runs: results,
    p50_ms: round(median(results.map((r) => r.p50_ms))),
    p99_ms: round(median(results.map((r) => r.p99_ms))),
  };
}

async function measureAdmission(server: RemoteServer) {
  progress(`${server.engine}: admission, API only (worker stopped)`);
  await server.stopWorker();
  const sessions = await Promise.all(
    Array.from({ length: plan.admissionSessions }, () => createSession(server)),
  );
  const apiOnly = await admissionRuns(server, sessions, plan.admissionsPerRun);
  await server.startWorker();
  await waitDrained(server);
  progress(`${server.engine}: admission, worker draining in the same process`);
  const withWorker = await admissionRuns(server, sessions, plan.admissionsPerRunWithWorker);
  await waitDrained(server);
  return { api_only: apiOnly, with_worker: withWorker };
}

// ---------------------------------------------------------------------------------------
// 2. Throughput with 8 concurrent sessions

async function throughputRun(server: RemoteServer, sessionsCount: number, turnsEach: number) {
  const sessions = await Promise.all(
    Array.from({ length: sessionsCount }, () => createSession(server)),
  );
  const streams = await Promise.all(sessions.map((id) => SseStream.open(server.url, id)));
  await settle(server);
  const before = await server.counters();
  const started = now();
  const turnTimes: number[] = [];
  await Promise.all(
    sessions.map(async (sessionId, index) => {
      const sse = streams[index] as SseStream;
      for (let i = 0; i < turnsEach; i++) {
        const turn = await runTurn(server, sse, sessionId);
        turnTimes.push(turn.done - turn.sent);
      }
    }),
  );
  const seconds = (now() - started) / 1000;
  await settle(server);
  const cost = perTurn(before, await server.counters(), sessionsCount * turnsEach);
  for (const sse of streams) sse.close();
  return {
    turns: sessionsCount * turnsEach,
    seconds: round(seconds),
    turns_per_s: round((sessionsCount * turnsEach) / seconds, 1),
    turn_p50_ms: round(percentile(turnTimes, 50)),
    queries_per_turn: round(cost.queries, 2),
    transactions_per_turn: round(cost.transactions, 2),
    round_trips_per_turn: round(cost.roundTrips, 2),
    commits_per_turn: round(cost.commits, 2),
  };
}

async function measureThroughput(server: RemoteServer) {
  progress(`${server.engine}: throughput warm-up`);
  await throughputRun(server, plan.concurrentSessions, 5);
  const results = [];
  for (let run = 0; run < runs; run++) {
    progress(`${server.engine}: throughput run ${run + 1}/${runs}`);
    results.push(await throughputRun(server, plan.concurrentSessions, plan.turnsPerSession));
  }
  return {
    sessions: plan.concurrentSessions,
    turns_per_session: plan.turnsPerSession,
    runs: results,
    turns_per_s: round(median(results.map((r) => r.turns_per_s)), 1),
    turn_p50_ms: round(median(results.map((r) => r.turn_p50_ms))),
  };
}

// ---------------------------------------------------------------------------------------
// 3. First delta → SSE client

async function firstDeltaRun(server: RemoteServer, turns: number) {
  const sessionId = await createSession(server);
  const sse = await SseStream.open(server.url, sessionId);
  const seen: { turn: TurnTiming; frame: Frame }[] = [];
  try {
    for (let i = 0; i < turns; i++) {
      const turn = await runTurn(server, sse, sessionId);
      const frame = sse.frames
        .slice(turn.mark)
        .find((f) => f.event === 'text_delta' && f.data.turn_id === turn.turnId);
      if (!frame) throw new Error(`no text_delta seen for ${turn.turnId}`);
      seen.push({ turn, frame });
    }
  } finally {
    sse.close();
  }
  const marks = await server.marks(
    seen.map(({ turn }) => turn.turnId),
    seen.map(({ frame }) => `${sessionId}:${frame.data.sequence}`),
  );
  const modelToClient: number[] = [];
  const modelToCommit: number[] = [];
  const commitToClient: number[] = [];
  const admittedToClient: number[] = [];
  for (const [index, { turn, frame }] of seen.entries()) {
    const model = marks.firstDelta[index];
    const commit = marks.committed[index];
    if (model === null || model === undefined || commit === null || commit === undefined) {
      throw new Error(`no server-side marks for ${turn.turnId}`);
    }
    modelToClient.push(frame.receivedAt - model);
    modelToCommit.push(commit - model);
    commitToClient.push(frame.receivedAt - commit);
    admittedToClient.push(frame.receivedAt - turn.admitted);
  }
  const summary = (samples: number[]) => ({
    p50_ms: round(percentile(samples, 50)),
    p99_ms: round(percentile(samples, 99)),
  });
  return {
    model_to_client: summary(modelToClient),
    model_to_commit: summary(modelToCommit),
    commit_to_client: summary(commitToClient),
    admitted_to_client: summary(admittedToClient),
  };
}

type FirstDeltaRun = Awaited<ReturnType<typeof firstDeltaRun>>;

function medianOfRuns(results: FirstDeltaRun[]): FirstDeltaRun {
  const of = (key: keyof FirstDeltaRun) => ({
    p50_ms: round(median(results.map((r) => r[key].p50_ms))),
    p99_ms: round(median(results.map((r) => r[key].p99_ms))),
  });
  return {
    model_to_client: of('model_to_client'),
    model_to_commit: of('model_to_commit'),
    commit_to_client: of('commit_to_client'),
    admitted_to_client: of('admitted_to_client'),
  };
}

async function measureFirstDelta(server: RemoteServer) {
  await server.observeDeltas(true);
  try {
    return await firstDeltaRuns(server);
  } finally {
    await server.observeDeltas(false);
  }
}

async function firstDeltaRuns(server: RemoteServer) {
  await firstDeltaRun(server, 5); // warm-up
  const zero = [];
  for (let run = 0; run < runs; run++) {
    progress(`${server.engine}: first delta run ${run + 1}/${runs}`);
    zero.push(await firstDeltaRun(server, plan.firstDeltaTurns));
  }
  await server.setModelDelay(plan.slowModelDelayMs);
  const slow = [];
  try {
    for (let run = 0; run < runs; run++) {
      progress(`${server.engine}: first delta, demo model at ${plan.slowModelDelayMs} ms/word`);
      slow.push(await firstDeltaRun(server, plan.slowModelTurns));
    }
  } finally {
    await server.setModelDelay(0);
  }
  return {
    demo_delay_0: { turns_per_run: plan.firstDeltaTurns, runs: zero, ...medianOfRuns(zero) },
    demo_delay_slow: {
      delay_ms_per_word: plan.slowModelDelayMs,
      turns_per_run: plan.slowModelTurns,
      runs: slow,
      ...medianOfRuns(slow),
    },
  };
}

// ---------------------------------------------------------------------------------------
// 4. Per-turn cost against history length

async function prefill(server: RemoteServer, sessionId: string, turns: number): Promise<void> {
  const sse = await SseStream.open(server.url, sessionId);
  try {
    for (let i = 0; i < turns; i++) await runTurn(server, sse, sessionId);
  } finally {
    sse.close();
  }
}

/**
 * One session per history level, pre-filled concurrently with real turns (admit, wait for
 * `done`) to N prior turns. Then `runs` rounds; in each round every level's session gets
 * `historyMeasuredTurns` measured turns, levels interleaved so that a noisy moment on the
 * machine does not land on one level only. A level's session thus grows during the
 * measurement: history N covers N … N + runs × historyMeasuredTurns − 1 prior turns.
 * Only the measured session's SSE reader is open while it is measured.
 */
async function measureHistory(server: RemoteServer) {
  progress(`${server.engine}: history: pre-filling ${plan.historyLevels.join(', ')} turns`);
  const sessions = await Promise.all(plan.historyLevels.map(() => createSession(server)));
  await Promise.all(
    sessions.map((sessionId, index) =>
      prefill(server, sessionId, plan.historyLevels[index] as number),
    ),
  );
  const perLevel = plan.historyLevels.map((history) => ({
    history,
    prior: history,
    results: [] as {
      prior_turns: number;
      median_turn_ms: number;
      queries_per_turn: number;
      transactions_per_turn: number;
      round_trips_per_turn: number;
      commits_per_turn: number;
    }[],
    windows: [] as { before: CounterSnapshot; after: CounterSnapshot }[],
  }));
  for (let run = 0; run < runs; run++) {
    progress(`${server.engine}: history run ${run + 1}/${runs}`);
    for (const [index, level] of perLevel.entries()) {
      const sessionId = sessions[index] as string;
      const projection = await requestJson(server.url, 'GET', `/api/v1/chat/sessions/${sessionId}`);
      const sse = await SseStream.open(
        server.url,
        sessionId,
        projection.body.latest_sequence as number,
      );
      const times: number[] = [];
      await settle(server);
      const before = await server.counters();
      try {
        for (let i = 0; i < plan.historyMeasuredTurns; i++) {
          const turn = await runTurn(server, sse, sessionId);
          times.push(turn.done - turn.sent);
        }
        await settle(server);
      } finally {
        sse.close();
      }
      const after = await server.counters();
      level.windows.push({ before, after });
      const cost = perTurn(before, after, plan.historyMeasuredTurns);
      level.results.push({
        prior_turns: level.prior,
        median_turn_ms: round(median(times)),
        queries_per_turn: round(cost.queries, 2),
        transactions_per_turn: round(cost.transactions, 2),
        round_trips_per_turn: round(cost.roundTrips, 2),
        commits_per_turn: round(cost.commits, 2),
      });
      level.prior += plan.historyMeasuredTurns;
    }
  }
  return perLevel.map((level) => {
    // Statement mix over every measured turn of this level, per turn.
    const mix: Record<string, number> = {};
    for (const { before, after } of level.windows) {
      const { statements } = perTurn(before, after, plan.historyMeasuredTurns * runs);
      for (const [key, value] of Object.entries(statements)) {
        mix[key] = round((mix[key] ?? 0) + value, 2);
      }
    }
    return {
      history_turns: level.history,
      measured_turns_per_run: plan.historyMeasuredTurns,
      runs: level.results,
      median_turn_ms: round(median(level.results.map((r) => r.median_turn_ms))),
      queries_per_turn: round(median(level.results.map((r) => r.queries_per_turn)), 2),
      transactions_per_turn: round(median(level.results.map((r) => r.transactions_per_turn)), 2),
      round_trips_per_turn: round(median(level.results.map((r) => r.round_trips_per_turn)), 2),
      commits_per_turn: round(median(level.results.map((r) => r.commits_per_turn)), 2),
      statement_mix_per_turn: Object.fromEntries(Object.entries(mix).sort((x, y) => y[1] - x[1])),
    };
  });
}

// ---------------------------------------------------------------------------------------
// 5. Bytes stored per turn

interface RelationSizes {
  [table: string]: { total: number; heap: number; indexes: number };
}

async function relationSizes(server: RemoteServer): Promise<RelationSizes> {
  const found = await server.query<{
    relname: string;
    total: number;
    heap: number;
    indexes: number;
  }>(
    `select c.relname,
            pg_total_relation_size(c.oid)::bigint as total,
            pg_relation_size(c.oid)::bigint as heap,
            pg_indexes_size(c.oid)::bigint as indexes
       from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where c.relkind = 'r' and n.nspname = current_schema() and c.relname = any($1)`,
    [[...tables]],
  );
  return Object.fromEntries(
    found.map((row) => [row.relname, { total: row.total, heap: row.heap, indexes: row.indexes }]),
  );
}

function sumTotal(sizes: RelationSizes, baseline: RelationSizes): number {
  return tables.reduce(
    (sum, table) => sum + (sizes[table]?.total ?? 0) - (baseline[table]?.total ?? 0),
    0,
  );
}

/** Per turn, by table: heap with TOAST, and indexes, less the empty schema's. */
function byTable(sizes: RelationSizes, baseline: RelationSizes, turns: number) {
  const per = (bytes: number) => Math.round(bytes / turns);
  return Object.fromEntries(
    tables.map((table) => {
      const now = sizes[table] ?? { total: 0, heap: 0, indexes: 0 };
      const empty = baseline[table] ?? { total: 0, heap: 0, indexes: 0 };
      return [
        table,
        {
          heap_and_toast_per_turn: per(now.total - now.indexes - (empty.total - empty.indexes)),
          indexes_per_turn: per(now.indexes - empty.indexes),
        },
      ];
    }),
  );
}

/** Each index of the measured tables, in bytes. */
async function indexSizes(server: RemoteServer): Promise<Record<string, number>> {
  const found = await server.query<{ name: string; bytes: number }>(
    `select i.relname as name, pg_relation_size(i.oid)::bigint as bytes
       from pg_index x
       join pg_class i on i.oid = x.indexrelid
       join pg_class t on t.oid = x.indrelid
       join pg_namespace n on n.oid = t.relnamespace
      where n.nspname = current_schema() and t.relname = any($1)`,
    [[...tables]],
  );
  return Object.fromEntries(found.map((row) => [row.name, Number(row.bytes)]));
}

/** Per turn, by index, less the empty schema's. */
function byIndex(sizes: Record<string, number>, baseline: Record<string, number>, turns: number) {
  return Object.fromEntries(
    Object.entries(sizes).map(([name, bytes]) => [
      name,
      Math.round((bytes - (baseline[name] ?? 0)) / turns),
    ]),
  );
}

async function measureBytes(
  server: RemoteServer,
  baseline: RelationSizes,
  baselineIndexes: Record<string, number>,
) {
  progress(`${server.engine}: bytes stored per turn`);
  const counts = await server.query<{ turns: number; bursts: number; pending: number }>(
    `select count(*) filter (where state = 'done') as turns,
            count(distinct coalesce(answered_by, turn_id)) filter (where state = 'done') as bursts,
            count(*) filter (where state <> 'done') as pending
       from turns`,
  );
  const { turns, bursts, pending } = counts[0] as {
    turns: number;
    bursts: number;
    pending: number;
  };
  const rows: Record<string, { rows: number; bytes: number }> = {};
  for (const table of tables) {
    const found = await server.query<{ rows: number; bytes: number }>(
      `select count(*) as rows, coalesce(sum(pg_column_size(t.*)), 0)::bigint as bytes from ${table} t`,
    );
    rows[table] = found[0] as { rows: number; bytes: number };
  }
  const text = await server.query<{ bytes: number }>(
    `select coalesce(sum(octet_length(content)), 0)::bigint as bytes from messages`,
  );
  const before = await relationSizes(server);
  const indexesBefore = await indexSizes(server);
  await server.query(`vacuum full ${tables.join(', ')}`);
  const after = await relationSizes(server);
  const indexesAfter = await indexSizes(server);
  const rowBytes = Object.values(rows).reduce((sum, r) => sum + r.bytes, 0);
  return {
    turns,
    bursts,
    pending_turns: pending,
    events: rows.events?.rows ?? 0,
    row_bytes_per_turn: Math.round(rowBytes / turns),
    row_bytes_per_turn_by_table: Object.fromEntries(
      tables.map((table) => [table, Math.round((rows[table]?.bytes ?? 0) / turns)]),
    ),
    transcript_text_bytes_per_turn: Math.round((text[0]?.bytes ?? 0) / turns),
    disk_bytes_per_turn_before_vacuum: Math.round(sumTotal(before, baseline) / turns),
    disk_bytes_per_turn_after_vacuum_full: Math.round(sumTotal(after, baseline) / turns),
    disk_before_vacuum_by_table: byTable(before, baseline, turns),
    disk_after_vacuum_full_by_table: byTable(after, baseline, turns),
    disk_before_vacuum_by_index: byIndex(indexesBefore, baselineIndexes, turns),
    disk_after_vacuum_full_by_index: byIndex(indexesAfter, baselineIndexes, turns),
    baseline_bytes_empty_schema: sumTotal(baseline, {}),
  };
}

// ---------------------------------------------------------------------------------------
// Engines

/**
 * The peer-shaped workload, `runs` times; on PostgreSQL, when the peer's benchmark is
 * available (PARLEY_BENCH_PEER_DIR), each Parley run is followed by one peer run on the
 * same server, so the ratio compares figures from the same minutes.
 */
async function measurePeerShaped(
  server: RemoteServer,
  peer: { dir: string; adminUrl: string } | null,
) {
  await server.setReply(peerReplyText);
  try {
    // Warm the path that is measured, as the peer's own bench does (40 turns) before it
    // measures: new conversations and their next turns, with the peer's reply.
    progress(`${server.engine}: peer-shaped warm-up`);
    await peerShapedLoad({ urlFor: () => server.url }, peerWarmUp);
    const parley = [];
    const peerRuns = [];
    for (let run = 0; run < runs; run++) {
      progress(`${server.engine}: peer-shaped run ${run + 1}/${runs}`);
      parley.push(await peerShapedRun(server));
      if (peer) {
        progress(`${server.engine}: LangGraph peer run ${run + 1}/${runs}`);
        peerRuns.push(await runPeerOnce(peer.dir, peer.adminUrl));
      }
    }
    const ours = medianOf(parley, [
      'turns_per_s',
      'latency_p50_ms',
      'latency_p99_ms',
      'round_trips_per_turn',
      'commits_per_turn',
      'statements_per_turn',
    ]);
    const theirs = peer ? medianOf(peerRuns, ['turns_per_s', 'lat_ms_p50', 'lat_ms_p99']) : null;
    return {
      plan: peerPlan,
      runs: parley,
      ...ours,
      peer: theirs ? { runs: peerRuns, ...theirs } : null,
      ratio_to_peer:
        theirs && theirs.turns_per_s
          ? round(Number(ours.turns_per_s) / Number(theirs.turns_per_s), 2)
          : null,
    };
  } finally {
    await server.setReply(null);
  }
}

async function benchEngine(
  storage: { url: string | null; dataDir: string },
  peer: { dir: string; adminUrl: string } | null = null,
) {
  const server = await RemoteServer.start(storage);
  try {
    const baseline = await relationSizes(server);
    const baselineIndexes = await indexSizes(server);
    const version = await server.query<{ server_version: string }>('show server_version');
    const sync = await server.query<{ synchronous_commit: string }>('show synchronous_commit');
    progress(`${server.engine}: round trip and commit floor`);
    const floor = await server.floor();
    await server.startWorker();
    const started = now();
    const phaseSeconds: Record<string, number> = {};
    const phase = async <T>(name: string, work: () => Promise<T>): Promise<T> => {
      const begun = now();
      const result = await work();
      phaseSeconds[name] = round((now() - begun) / 1000, 1);
      return result;
    };
    const throughput = await phase('throughput', () => measureThroughput(server));
    const peerShaped = await phase('peer_shaped', () => measurePeerShaped(server, peer));
    const firstDelta = await phase('first_delta', () => measureFirstDelta(server));
    const history = await phase('history', () => measureHistory(server));
    await waitDrained(server);
    const bytes = await phase('bytes', () => measureBytes(server, baseline, baselineIndexes));
    const replyBytes = await phase('reply_bytes', () => measureReplyBytes(server));
    const providerPath = pacedProvider
      ? await phase('provider_path', () =>
          measureProviderPath(server, pacedProvider as PacedProvider),
        )
      : null;
    const toolLoop = await phase('tool_loop', () => measureToolLoop(server));
    const admission = await phase('admission', () => measureAdmission(server));
    return {
      engine: server.engine,
      server_version: version[0]?.server_version ?? null,
      synchronous_commit: sync[0]?.synchronous_commit ?? null,
      clock_offset_ms: round(server.clockOffsetMs, 4),
      clock_offset_uncertainty_ms: round(server.clockOffsetUncertaintyMs, 4),
      floor,
      seconds: round((now() - started) / 1000, 1),
      phase_seconds: phaseSeconds,
      admission,
      throughput,
      peer_shaped: peerShaped,
      first_delta: firstDelta,
      history,
      bytes,
      reply_bytes: replyBytes,
      provider_path: providerPath,
      tool_loop: toolLoop,
    };
  } finally {
    await server.close();
  }
}

async function benchPglite() {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-'));
  try {
    return await benchEngine({ url: null, dataDir });
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function benchPostgres() {
  const admin = postgresAdminUrl();
  if ('skipped' in admin) return { skipped: admin.skipped };
  let database: FreshDatabase;
  try {
    database = await freshDatabase(
      admin.url,
      'parley_bench',
      synchronousCommit === null ? {} : { synchronous_commit: synchronousCommit },
    );
  } catch (error) {
    return { skipped: `cannot create a database on the PostgreSQL server: ${String(error)}` };
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-'));
  const peerDir = process.env.PARLEY_BENCH_PEER_DIR;
  try {
    return await benchEngine(
      { url: database.url, dataDir },
      peerDir ? { dir: peerDir, adminUrl: admin.url } : null,
    );
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
    await database.drop();
  }
}

// ---------------------------------------------------------------------------------------
// Report

type EngineResult = Awaited<ReturnType<typeof benchEngine>>;
type Outcome = EngineResult | { skipped: string } | { failed: string } | undefined;

function table(results: { pglite: Outcome; postgres: Outcome }): string {
  const engineNames = ['pglite', 'postgres'] as const;
  const cell = (engine: (typeof engineNames)[number], get: (r: EngineResult) => string) => {
    const result = results[engine];
    if (!result) return 'not run';
    if ('skipped' in result) return 'skipped';
    if ('failed' in result) return 'FAILED';
    return get(result);
  };
  const pair = (a: number, b: number) => `${fmt(a)} / ${fmt(b)}`;
  const level = (r: EngineResult, history: number) =>
    r.history.find((h) => h.history_turns === history);
  const rows: [string, (r: EngineResult) => string][] = [
    [
      '0. floor: select 1 round trip p50 / p99 (ms)',
      (r) => pair(r.floor.select_1_p50_ms, r.floor.select_1_p99_ms),
    ],
    [
      '   floor: 1-row insert commit p50 / p99 (ms)',
      (r) => pair(r.floor.commit_p50_ms, r.floor.commit_p99_ms),
    ],
    [
      '1. admission p50 / p99, API only (ms)',
      (r) => pair(r.admission.api_only.p50_ms, r.admission.api_only.p99_ms),
    ],
    [
      '   admission p50 / p99, worker in process (ms)',
      (r) => pair(r.admission.with_worker.p50_ms, r.admission.with_worker.p99_ms),
    ],
    [
      `2. turns/s, ${plan.concurrentSessions} sessions × ${plan.turnsPerSession} turns`,
      (r) => fmt(r.throughput.turns_per_s),
    ],
    [
      `2b. peer-shaped ${peerPlan.threads}×${peerPlan.turnsPerThread} at ${peerPlan.concurrency}: turns/s`,
      (r) => fmt(r.peer_shaped.turns_per_s),
    ],
    [
      '    turn latency p50 / p99 (ms)',
      (r) => pair(r.peer_shaped.latency_p50_ms, r.peer_shaped.latency_p99_ms),
    ],
    [
      '    round trips / commits per turn',
      (r) => pair(r.peer_shaped.round_trips_per_turn, r.peer_shaped.commits_per_turn),
    ],
    [
      '    LangGraph peer turns/s (same run) / ratio',
      (r) =>
        r.peer_shaped.peer
          ? `${fmt(Number(r.peer_shaped.peer.turns_per_s))} / ${fmt(r.peer_shaped.ratio_to_peer)}×`
          : 'not run',
    ],
    [
      '3. model 1st delta → SSE client p50 / p99 (ms)',
      (r) =>
        pair(
          r.first_delta.demo_delay_0.model_to_client.p50_ms,
          r.first_delta.demo_delay_0.model_to_client.p99_ms,
        ),
    ],
    [
      '   of which delta commit → client p50 / p99',
      (r) =>
        pair(
          r.first_delta.demo_delay_0.commit_to_client.p50_ms,
          r.first_delta.demo_delay_0.commit_to_client.p99_ms,
        ),
    ],
    [
      '   202 received → 1st delta at client p50 / p99',
      (r) =>
        pair(
          r.first_delta.demo_delay_0.admitted_to_client.p50_ms,
          r.first_delta.demo_delay_0.admitted_to_client.p99_ms,
        ),
    ],
    [
      `   same, model at ${plan.slowModelDelayMs} ms/word: 1st delta → client`,
      (r) =>
        pair(
          r.first_delta.demo_delay_slow.model_to_client.p50_ms,
          r.first_delta.demo_delay_slow.model_to_client.p99_ms,
        ),
    ],
    ...plan.historyLevels.map(
      (history) =>
        [
          `4. history ${history}-${history + runs * plan.historyMeasuredTurns - 1}: turn ms / round trips / commits`,
          (r: EngineResult) => {
            const found = level(r, history);
            return found
              ? `${fmt(found.median_turn_ms)} / ${fmt(found.round_trips_per_turn)} / ${fmt(found.commits_per_turn)}`
              : 'n/a';
          },
        ] as [string, (r: EngineResult) => string],
    ),
    ['5. bytes/turn: rows (no indexes)', (r) => String(r.bytes.row_bytes_per_turn)],
    [
      '   bytes/turn: on disk, before vacuum',
      (r) => String(r.bytes.disk_bytes_per_turn_before_vacuum),
    ],
    [
      '   bytes/turn: on disk, after VACUUM FULL',
      (r) => String(r.bytes.disk_bytes_per_turn_after_vacuum_full),
    ],
    ['   (transcript text per turn, bytes)', (r) => String(r.bytes.transcript_text_bytes_per_turn)],
    ...[0, 1].map(
      (index) =>
        [
          `5b. ${index === 0 ? '1 KB' : '10 KB'} reply: stored bytes/turn (× text)`,
          (r: EngineResult) => {
            const size = r.reply_bytes.sizes[index];
            return size ? `${size.stored_bytes_per_turn} (${fmt(size.times_the_text)}×)` : 'n/a';
          },
        ] as [string, (r: EngineResult) => string],
    ),
    [
      '    10 KB: first 10 / last 10 turns (bytes)',
      (r) => {
        const size = r.reply_bytes.sizes[1];
        return size ? `${size.first_ten_bytes_per_turn} / ${size.last_ten_bytes_per_turn}` : 'n/a';
      },
    ],
    [
      '    fit: × text + fixed bytes',
      (r) => `${fmt(r.reply_bytes.slope)}× + ${r.reply_bytes.fixed_overhead_bytes}`,
    ],
    [
      '6. provider path: Parley first-token overhead p50 / p99 (ms)',
      (r) =>
        r.provider_path
          ? pair(
              r.provider_path.first_token_overhead_p50_ms,
              r.provider_path.first_token_overhead_p99_ms,
            )
          : 'not run',
    ],
    [
      '   journal bytes per 1,000 reply tokens',
      (r) =>
        r.provider_path ? String(r.provider_path.journal_bytes_per_1000_reply_tokens) : 'not run',
    ],
    [
      '7. tool loop: overhead per tool step (ms / round trips)',
      (r) => pair(r.tool_loop.overhead_per_tool_step_ms, r.tool_loop.round_trips_per_tool_step),
    ],
    [
      '   bytes per turn with three tool calls',
      (r) => String(r.tool_loop.three_tool_calls.bytes_per_turn),
    ],
  ];
  const labelWidth = Math.max(...rows.map(([label]) => label.length)) + 2;
  const width = 22;
  const lines = [
    `${'metric (median of runs)'.padEnd(labelWidth)}${'PGlite'.padEnd(width)}PostgreSQL`,
    '-'.repeat(labelWidth + width * 2),
    ...rows.map(
      ([label, get]) =>
        `${label.padEnd(labelWidth)}${cell('pglite', get).padEnd(width)}${cell('postgres', get)}`,
    ),
  ];
  for (const engine of engineNames) {
    const result = results[engine];
    if (result && 'skipped' in result) lines.push('', `${engine}: skipped: ${result.skipped}`);
    if (result && 'failed' in result) lines.push('', `${engine}: FAILED: ${result.failed}`);
  }
  return lines.join('\n');
}

/** The provider-path phase's local OpenAI-style server, started before the servers under test. */
let pacedProvider: PacedProvider | null = null;

async function main(): Promise<void> {
  const root = dirname(dirname(fileURLToPath(import.meta.url)));
  pacedProvider = await PacedProvider.start();
  process.env.PARLEY_BENCH_PACED_URL = pacedProvider.url;
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const started = now();
  const loadBefore = loadavg();
  const results: { pglite: Outcome; postgres: Outcome } = {
    pglite: undefined,
    postgres: undefined,
  };
  // One engine failing (e.g. a turn that never ends) still reports the other; exit code 1.
  const attempt = async <T>(work: () => Promise<T>): Promise<T | { failed: string }> => {
    try {
      return await work();
    } catch (error) {
      process.exitCode = 1;
      const message = error instanceof Error ? error.message : String(error);
      progress(`failed: ${error instanceof Error ? (error.stack ?? message) : message}`);
      return { failed: message };
    }
  };
  if (engines.includes('pglite')) {
    progress('PGlite (fresh temporary data directory)');
    results.pglite = await attempt(benchPglite);
  }
  if (engines.includes('postgres')) {
    progress('PostgreSQL (fresh database)');
    results.postgres = await attempt(benchPostgres);
    if ('skipped' in results.postgres) progress(`PostgreSQL skipped: ${results.postgres.skipped}`);
  }
  // Issue 10: executions' timers and the scheduler, each on a fresh database of its own.
  const missions: Partial<Record<'pglite' | 'postgres', MissionsFigures>> = {};
  for (const engine of ['pglite', 'postgres'] as const) {
    if (!engines.includes(engine)) continue;
    const admin = engine === 'postgres' ? postgresAdminUrl() : null;
    if (admin && 'skipped' in admin) continue;
    progress(`${engine}: missions' timers and the scheduler`);
    const figures = await attempt(() => benchMissions(engine, admin?.url ?? null));
    if (!('failed' in figures)) missions[engine] = figures;
  }
  const machine = machineFigures(loadBefore);
  const report = {
    date: new Date().toISOString(),
    revision: revision(root),
    machine,
    versions: {
      parley: pkg.version,
      pglite: pkg.dependencies['@electric-sql/pglite'],
      pg: pkg.dependencies.pg,
    },
    method: {
      server:
        'child process (bench/child.ts: the parts startProcess composes, instrumented by bench/server.ts); client in the parent process; HTTP on 127.0.0.1',
      demo_delay_ms: 0,
      runs,
      postgres_synchronous_commit_override: synchronousCommit,
      plan,
    },
    total_seconds: round((now() - started) / 1000, 1),
    results,
    missions,
  };
  const out = process.env.PARLEY_BENCH_OUT ?? join(root, 'bench', 'results', 'latest.json');
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, await formatJson(out, report));
  const charts = writeBenchCharts(out, report);
  process.stdout.write(
    `\nParley benchmark — ${machine.cpus} CPUs (${machine.cpu_model}), Node ${machine.node}, ${runs} runs each, demo model at 0 ms delay; load average ${machine.load_average_1m_before} before, ${machine.load_average_1m_after} after\n\n`,
  );
  process.stdout.write(`${table(results)}\n${missionsTable(missions)}\n\n`);
  process.stdout.write(
    `total ${fmt(report.total_seconds)} s; raw results in ${out}, charts in ${charts.join(', ')}; method in docs/benchmarks.md\n`,
  );
  closeClient();
  await pacedProvider.close();
}

main().catch((error: unknown) => {
  process.stderr.write(
    `bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exitCode = 1;
});
