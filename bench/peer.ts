import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { requestJson, SseStream, type Frame } from './http.js';
import { now, type RemoteServer } from './remote.js';
import { median, percentile, round } from './stats.js';

/**
 * The peer-shaped run (issue 6): the workload of `../shared/bench/langgraph`'s `conc` mode,
 * done the way a Parley client does it. 100 conversations × 10 turns, 8 at a time, jobs
 * taken in the peer's order (round k of every conversation before round k+1); the user's
 * ~120-character message, and a ~400-character reply streamed word by word by an instant
 * model (the peer's InstantChat, as a LanguageModelV3: bench/server.ts). A turn, for
 * Parley: POST the message (a conversation's first turn creates its session), then wait on
 * the conversation's open SSE stream for the `done` that names it.
 */

/** The peer's texts, verbatim. */
export const peerUserText =
  'Please summarise the status of order #12345 and tell me whether the shipment will arrive before Friday afternoon. Thanks!';
export const peerReplyText =
  'Order #12345 left the warehouse on Tuesday and is currently in transit with the regional carrier. ' +
  'Based on the latest scan it is expected to arrive on Thursday between 10:00 and 14:00, so it should arrive before Friday afternoon. ' +
  'If the carrier reports a delay I will notify you right away. Is there anything else you would like me to check about this order or your account today?';

export const peerPlan = { threads: 100, turnsPerThread: 10, concurrency: 8 };
/** The warm-up before the measured runs: 100 turns of the same shape, not measured. */
export const peerWarmUp = { threads: 20, turnsPerThread: 5, concurrency: 8 };

/** Where a load's conversations go: each conversation's POSTs and SSE stream use one API. */
export interface LoadTarget {
  urlFor(conversation: number): URL;
}

export interface PeerShapedLoad {
  turns: number;
  seconds: number;
  turns_per_s: number;
  latency_p50_ms: number;
  latency_p99_ms: number;
  /** Turns that waited for their conversation's previous turn (see above). */
  waited_for_conversation: number;
}

/**
 * The peer-shaped load itself, against any set of APIs: `plan.threads` conversations ×
 * `plan.turnsPerThread` turns, `plan.concurrency` at a time, in the peer's order. Wall time
 * runs from the first POST to the last `done`.
 */
export async function peerShapedLoad(
  target: LoadTarget,
  plan: { threads: number; turnsPerThread: number; concurrency: number } = peerPlan,
): Promise<PeerShapedLoad> {
  const { threads, turnsPerThread, concurrency } = plan;
  const jobs: number[] = [];
  for (let round = 0; round < turnsPerThread; round++) {
    for (let thread = 0; thread < threads; thread++) jobs.push(thread);
  }
  const sessions = new Map<number, { sessionId: string; stream: SseStream }>();
  /** A conversation's turn in flight, by conversation. */
  const busy = new Map<number, Promise<void>>();
  let waits = 0;
  const latencies: number[] = [];
  const tag = randomBytes(3).toString('hex');
  let next = 0;
  let counter = 0;
  const started = now();
  try {
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < jobs.length) {
          const thread = jobs[next++] as number;
          const url = target.urlFor(thread);
          // A conversation's next turn waits for its previous one: only when that one took
          // longer than a turn of each of the other conversations (a very loaded machine).
          while (busy.has(thread)) {
            waits += 1;
            await busy.get(thread);
          }
          let ended = () => {};
          busy.set(thread, new Promise<void>((resolve) => (ended = resolve)));
          const turnId = `peer_${tag}_${thread}_${counter++}`;
          const known = sessions.get(thread);
          const sent = now();
          const mark = known?.stream.frames.length ?? 0;
          const admitted = await requestJson(url, 'POST', '/api/v1/chat/turns', {
            ...(known ? { session_id: known.sessionId } : {}),
            turn_id: turnId,
            message: peerUserText,
          });
          if (admitted.status !== 202) {
            throw new Error(
              `admission answered ${admitted.status}: ${JSON.stringify(admitted.body)}`,
            );
          }
          let conversation = known;
          if (!conversation) {
            const sessionId = admitted.body.session_id as string;
            conversation = { sessionId, stream: await SseStream.open(url, sessionId) };
            sessions.set(thread, conversation);
          }
          const end = await conversation.stream.waitFor(
            (frame: Frame) =>
              ['done', 'error', 'cancelled'].includes(frame.event) &&
              Array.isArray(frame.data.turn_ids) &&
              frame.data.turn_ids.includes(turnId),
            mark,
            60_000,
          );
          if (end.event !== 'done') throw new Error(`turn ${turnId} ended with ${end.event}`);
          latencies.push(end.receivedAt - sent);
          busy.delete(thread);
          ended();
        }
      }),
    );
  } finally {
    for (const { stream } of sessions.values()) stream.close();
  }
  const seconds = (now() - started) / 1000;
  const turns = jobs.length;
  return {
    turns,
    seconds: round(seconds),
    turns_per_s: round(turns / seconds, 1),
    latency_p50_ms: round(percentile(latencies, 50)),
    latency_p99_ms: round(percentile(latencies, 99)),
    waited_for_conversation: waits,
  };
}

export interface PeerShapedRun extends PeerShapedLoad {
  round_trips_per_turn: number;
  commits_per_turn: number;
  statements_per_turn: number;
}

/** The peer-shaped load against the bench server, with its statements counted. */
export async function peerShapedRun(server: RemoteServer): Promise<PeerShapedRun> {
  const before = await server.counters();
  const load = await peerShapedLoad({ urlFor: () => server.url });
  // Let the worker finish what follows the last done before counting.
  await new Promise((resolve) => setTimeout(resolve, 100));
  const after = await server.counters();
  const { turns } = load;
  return {
    ...load,
    round_trips_per_turn: round((after.roundTrips - before.roundTrips) / turns, 2),
    commits_per_turn: round((after.commits - before.commits) / turns, 2),
    statements_per_turn: round((after.queries - before.queries) / turns, 2),
  };
}

export interface PeerResult {
  turns_per_s: number;
  lat_ms_p50: number;
  lat_ms_p99: number;
  [field: string]: unknown;
}

/**
 * Runs the peer's own benchmark once (`bench.mts conc --saver pg --durability async`) on a
 * fresh database of the same PostgreSQL, when PARLEY_BENCH_PEER_DIR points at a copy of
 * `../shared/bench/langgraph` with its dependencies installed (docs/benchmarks.md). Parley
 * does not depend on it: without the variable, the peer is simply not measured.
 */
export async function runPeerOnce(peerDir: string, adminUrl: string): Promise<PeerResult> {
  const name = `lgbench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  try {
    const output = execFileSync(
      'npx',
      ['tsx', 'bench.mts', 'conc', '--saver', 'pg', '--durability', 'async'],
      {
        cwd: peerDir,
        env: { ...process.env, PG_URL: url.toString() },
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'inherit'],
        timeout: 600_000,
      },
    );
    const line = output
      .trim()
      .split('\n')
      .filter((text) => text.startsWith('{'))
      .at(-1);
    if (!line) throw new Error('the peer printed no result');
    return JSON.parse(line) as PeerResult;
  } finally {
    const dropper = new pg.Client({ connectionString: adminUrl });
    await dropper.connect();
    await dropper.query(`drop database if exists ${name} with (force)`);
    await dropper.end();
  }
}

/** Medians of several runs of a numeric record. */
export function medianOf<T, K extends keyof T>(runs: T[], keys: K[]): Record<K, number> {
  return Object.fromEntries(
    keys.map((key) => [key, round(median(runs.map((run) => Number(run[key]))), 2)]),
  ) as Record<K, number>;
}
