import { performance } from 'node:perf_hooks';
import type { LanguageModelV3, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import type { FastifyInstance } from 'fastify';
import { Directory } from '../src/agents/directory.js';
import { buildApp } from '../src/api/app.js';
import { compileConfig } from '../src/config/load.js';
import type { Config } from '../src/config/types.js';
import { createLogger } from '../src/log.js';
import { createModelRegistry } from '../src/providers/registry.js';
import { Worker } from '../src/runtime/worker.js';
import { builtInTools } from '../src/tools/registry.js';
import type { Db, Queryable, QueryResult, Statement } from '../src/store/db.js';
import { migrate } from '../src/store/migrate.js';
import { openPglite } from '../src/store/pglite.js';
import { openPostgres } from '../src/store/postgres.js';
import { Wakeups } from '../src/store/wakeups.js';

/**
 * The process under test: the same parts `startProcess` (src/cli/start.ts) composes for
 * `parley serve` (migrated store, one Wakeups subscription, the agents' Directory, the
 * Fastify app listening on 127.0.0.1:0, one Worker), with the production defaults of the configuration. Two
 * differences, both pure observation:
 *
 * - the Db handed to the API and the worker is wrapped to count statements and
 *   transactions, and to note when a transaction that journaled a `text_delta` committed;
 * - the model the worker resolves is wrapped to note when it emitted its first text delta.
 *
 * The worker can be stopped and restarted, so admission can be measured with and without
 * a worker draining in the same process. bench/child.ts runs this in its own process; the
 * benchmark's client (bench/run.ts) drives it over HTTP and an IPC control channel.
 */

export interface Counters {
  queries: number;
  transactions: number;
  /** Round trips to the database: a statement alone is one, a transaction its statements + 2. */
  roundTrips: number;
  /** Commits that wrote: transactions, and single statements that changed rows. */
  commits: number;
  /** A named statement's name, or an unnamed one's text (whitespace collapsed, first 90
   * characters) → executions. */
  byStatement: Map<string, number>;
}

export type CounterSnapshot = Counters;

export interface BenchServer {
  engine: 'pglite' | 'postgres';
  url: URL;
  config: Config;
  /** The uninstrumented store, for the benchmark's own queries (never counted). */
  raw: Db;
  counters: Counters;
  /** epochNow() at which the model emitted the first text delta, by turn marker. */
  modelFirstDelta: Map<string, number>;
  /** epochNow() at which a text_delta's transaction committed, by `session:sequence`. */
  deltaCommitted: Map<string, number>;
  setModelDelay(ms: number): void;
  /** A fixed reply instead of the demo's echo (null: back to the echo), streamed word by word. */
  setReply(text: string | null): void;
  /** Notes first deltas and text_delta commits (the first-delta phase only: it costs). */
  observeDeltas(on: boolean): void;
  startWorker(): void;
  stopWorker(): Promise<void>;
  close(): Promise<void>;
}

/** Wall-clock milliseconds with sub-millisecond resolution, comparable across processes. */
export function epochNow(): number {
  return performance.timeOrigin + performance.now();
}

export interface Floor {
  select_1_p50_ms: number;
  select_1_p99_ms: number;
  commit_p50_ms: number;
  commit_p99_ms: number;
}

/**
 * What one round trip (`select 1`) and one durable commit (a one-row autocommit insert)
 * cost on this engine and machine, measured in the server process before any load.
 */
export async function measureFloor(raw: Db): Promise<Floor> {
  const nearest = (samples: number[], p: number) => {
    const sorted = [...samples].sort((a, b) => a - b);
    const value =
      sorted[Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length))) - 1];
    return Math.round((value ?? Number.NaN) * 1000) / 1000;
  };
  await raw.query('create table bench_probe (id serial primary key, note text not null)');
  try {
    const roundTrip: number[] = [];
    for (let i = 0; i < 350; i++) {
      const started = performance.now();
      await raw.query('select 1');
      if (i >= 50) roundTrip.push(performance.now() - started);
    }
    const commit: number[] = [];
    for (let i = 0; i < 170; i++) {
      const started = performance.now();
      await raw.query('insert into bench_probe (note) values ($1)', [`probe ${i}`]);
      if (i >= 20) commit.push(performance.now() - started);
    }
    return {
      select_1_p50_ms: nearest(roundTrip, 50),
      select_1_p99_ms: nearest(roundTrip, 99),
      commit_p50_ms: nearest(commit, 50),
      commit_p99_ms: nearest(commit, 99),
    };
  } finally {
    await raw.query('drop table bench_probe');
  }
}

export function snapshot(counters: Counters): CounterSnapshot {
  return { ...counters, byStatement: new Map(counters.byStatement) };
}

/** Turn markers are embedded in the user message: `bench:<turn_id>`. */
export const markerPattern = /bench:([A-Za-z0-9_-]+)/;

export async function startBenchServer(storage: {
  url: string | null;
  dataDir: string;
}): Promise<BenchServer> {
  const config = compileConfig(
    {
      server: { host: '127.0.0.1', port: 0 },
      storage: { url: storage.url, data_dir: storage.dataDir },
      // The peer-shaped run keeps one stream open per session: a hundred of them.
      limits: { streams_per_principal: 10_000 },
      providers: {
        demo: { kind: 'demo' },
        // The provider-path phase's local OpenAI-style server (bench/providerPath.ts).
        ...(process.env.PARLEY_BENCH_PACED_URL
          ? {
              paced: {
                kind: 'openai_compatible',
                base_url: `${process.env.PARLEY_BENCH_PACED_URL}/v1`,
              },
            }
          : {}),
      },
      agents: {
        default: { model: 'demo/echo' },
        tooled: { model: 'demo/echo', tools: { clock: 'allow' } },
        ...(process.env.PARLEY_BENCH_PACED_URL ? { paced: { model: 'paced/paced-200' } } : {}),
      },
    },
    { PARLEY_DEMO_DELAY_MS: '0' },
    'bench',
  );
  const raw = config.storage.url
    ? await openPostgres(config.storage.url, config.storage.poolSize)
    : await openPglite(config.storage.dataDir);
  await migrate(raw);

  const counters: Counters = {
    queries: 0,
    transactions: 0,
    roundTrips: 0,
    commits: 0,
    byStatement: new Map(),
  };
  const deltaCommitted = new Map<string, number>();
  let observing = false;
  const db = countingDb(
    raw,
    counters,
    () => observing,
    (key) => deltaCommitted.set(key, epochNow()),
  );

  const log = createLogger({ level: 'warn', destination: process.stderr });
  const wakeups = new Wakeups(db);
  await wakeups.start();

  // Agents come from stored definitions, seeded from the configuration, as in production
  // (src/cli/start.ts): turns record their agent revision.
  const directory = new Directory({
    db,
    config,
    log,
    env: process.env,
    pollMs: config.runtime.pollMs,
  });
  await directory.seedAndLoad();
  directory.start(wakeups);
  const { agents, missions } = directory;

  const modelFirstDelta = new Map<string, number>();
  const registries = new Map<number, ReturnType<typeof createModelRegistry>>();
  let delayMs = 0;
  let reply: string | null = null;
  const registryFor = (ms: number) => {
    let registry = registries.get(ms);
    if (!registry) {
      registry = createModelRegistry({ ...config, demo: { delayMs: ms } });
      registries.set(ms, registry);
    }
    return registry;
  };
  const resolveModel = (provider: string, modelId: string) => {
    const model = reply === null ? registryFor(delayMs)(provider, modelId) : fixedReplyModel(reply);
    return observing
      ? observeModel(model, (marker) => modelFirstDelta.set(marker, epochNow()))
      : model;
  };

  const app: FastifyInstance = await buildApp({
    db,
    wakeups,
    config,
    log,
    providersReady: () => true,
    agents,
    missions,
    directory,
    // As `parley serve`: an admission claims its session for the worker when it can.
    handoff: { reserveSession: (tenant) => worker?.reserveSession(tenant) ?? null },
  });
  const address = await app.listen({ host: config.server.host, port: config.server.port });

  let worker: Worker | null = null;
  let generation = 0;
  const stopWorker = async () => {
    const running = worker;
    worker = null;
    await running?.stop();
  };
  return {
    engine: raw.engine,
    url: new URL(address),
    config,
    raw,
    counters,
    modelFirstDelta,
    deltaCommitted,
    setModelDelay(ms) {
      delayMs = ms;
    },
    setReply(text) {
      reply = text;
    },
    observeDeltas(on) {
      observing = on;
    },
    startWorker() {
      if (worker) return;
      generation += 1;
      worker = new Worker({
        db,
        wakeups,
        config,
        resolveModel,
        log,
        owner: `bench:${process.pid}:${generation}`,
        tools: builtInTools(),
        agents,
      });
      worker.start();
    },
    stopWorker,
    async close() {
      await app.close();
      await stopWorker();
      directory.stop();
      await wakeups.stop();
      await raw.close();
    },
  };
}

interface StatementInfo {
  key: string;
  /** Does this statement commit something (a write, or a notification: both flush the WAL)? */
  writes: boolean;
}

/**
 * What the counters need of a statement, computed once per distinct statement: a named
 * statement is keyed by its name, an unnamed one by its text, so a turn costs a map look-up
 * per statement rather than a regex over its SQL.
 */
function statementInfo(cache: Map<string, StatementInfo>, statement: string | Statement) {
  const cacheKey = typeof statement === 'string' ? statement : statement.name;
  let info = cache.get(cacheKey);
  if (!info) {
    const text = typeof statement === 'string' ? statement : statement.text;
    info = {
      key:
        typeof statement === 'string'
          ? text.replace(/\s+/g, ' ').trim().slice(0, 90)
          : statement.name,
      writes: /\b(insert|update|delete|pg_notify)\b/i.test(text),
    };
    cache.set(cacheKey, info);
  }
  return info;
}

/**
 * Whether a single writing statement changed anything: a statement that returns rows only
 * when it applied (the token-gated CTEs, the claim) or reports `last_sequence` null when it
 * did not (an admission that was a replay). A statement that changed nothing commits
 * nothing that needs the disk.
 */
function applied(result: QueryResult<unknown>): boolean {
  if (result.rowCount === 0) return false;
  const first = result.rows[0] as Record<string, unknown> | undefined;
  return !(first && 'last_sequence' in first && first.last_sequence === null);
}

/**
 * The `session:sequence` of a text_delta a statement journals: from its events parameter
 * (the JSON array the insert unpacks) and the `last_sequence` the statement returned.
 */
function deltaKeys(params: unknown[] | undefined, result: QueryResult<unknown>): string[] {
  const last = (result.rows[0] as { last_sequence?: unknown } | undefined)?.last_sequence;
  const sessionId = params?.[0];
  if (typeof last !== 'number' || typeof sessionId !== 'string') return [];
  const json = params?.find(
    (param): param is string => typeof param === 'string' && param.includes('"type":"text_delta"'),
  );
  if (json === undefined) return [];
  try {
    const events = JSON.parse(json) as { type: string }[];
    return events.flatMap((event, index) =>
      event.type === 'text_delta' ? [`${sessionId}:${last - (events.length - 1 - index)}`] : [],
    );
  } catch {
    return [];
  }
}

/**
 * Counts every statement the application issues (`query`, inside or outside a
 * transaction), every transaction, round trips (BEGIN and COMMIT are issued by the engine
 * adapters: a transaction costs two more) and commits that wrote. While `observing()`, it
 * also notes when each journaled text_delta committed.
 */
function countingDb(
  inner: Db,
  counters: Counters,
  observing: () => boolean,
  onDeltaCommitted: (key: string) => void,
): Db {
  const statements = new Map<string, StatementInfo>();
  const wrap = (target: Queryable, deltas: string[] | null): Queryable => ({
    async query<Row>(statement: string | Statement, params?: unknown[]): Promise<QueryResult<Row>> {
      const info = statementInfo(statements, statement);
      counters.queries += 1;
      counters.byStatement.set(info.key, (counters.byStatement.get(info.key) ?? 0) + 1);
      counters.roundTrips += 1;
      const result = await target.query<Row>(statement, params);
      const keys = observing() ? deltaKeys(params, result) : [];
      if (deltas) deltas.push(...keys);
      else {
        if (info.writes && applied(result)) counters.commits += 1;
        for (const key of keys) onDeltaCommitted(key);
      }
      return result;
    },
  });
  const root = wrap(inner, null);
  return {
    engine: inner.engine,
    query: <Row>(statement: string | Statement, params?: unknown[]) =>
      root.query<Row>(statement, params),
    async transaction(work) {
      counters.transactions += 1;
      counters.commits += 1;
      counters.roundTrips += 2;
      const deltas: string[] = [];
      const result = await inner.transaction((tx) => work(wrap(tx, deltas)));
      for (const key of deltas) onDeltaCommitted(key);
      return result;
    },
    listen: (channel, onPayload) => inner.listen(channel, onPayload),
    close: () => inner.close(),
  };
}

/**
 * What the peer's benchmark streams (its InstantChat): a fixed reply, word-sized chunks,
 * no delay, on the same LanguageModelV3 interface as every model.
 */
function fixedReplyModel(text: string): LanguageModelV3 {
  const words = text.match(/\S+\s*/g) ?? [];
  return {
    specificationVersion: 'v3',
    provider: 'bench',
    modelId: 'fixed-reply',
    supportedUrls: {},
    doGenerate: () => Promise.reject(new Error('the bench model only streams')),
    async doStream() {
      const stream = new ReadableStream<LanguageModelV3StreamPart>({
        start(controller) {
          controller.enqueue({ type: 'stream-start', warnings: [] });
          controller.enqueue({ type: 'text-start', id: 't' });
          for (const word of words)
            controller.enqueue({ type: 'text-delta', id: 't', delta: word });
          controller.enqueue({ type: 'text-end', id: 't' });
          controller.enqueue({
            type: 'finish',
            finishReason: { unified: 'stop', raw: 'stop' },
            usage: {
              inputTokens: { total: 30, noCache: 30, cacheRead: 0, cacheWrite: 0 },
              outputTokens: { total: words.length, text: words.length, reasoning: 0 },
            },
          });
          controller.close();
        },
      });
      return { stream };
    },
  };
}

/** Passes the model through unchanged, noting when its stream yields the first text delta. */
function observeModel(
  model: LanguageModelV3,
  onFirstDelta: (marker: string) => void,
): LanguageModelV3 {
  return {
    specificationVersion: model.specificationVersion,
    provider: model.provider,
    modelId: model.modelId,
    supportedUrls: model.supportedUrls,
    doGenerate: (options) => model.doGenerate(options),
    async doStream(options) {
      const lastUser = [...options.prompt].reverse().find((message) => message.role === 'user');
      const text =
        lastUser && Array.isArray(lastUser.content)
          ? lastUser.content.map((part) => ('text' in part ? part.text : '')).join('')
          : '';
      const marker = markerPattern.exec(text)?.[1] ?? null;
      const result = await model.doStream(options);
      let seen = false;
      const stream = result.stream.pipeThrough(
        new TransformStream<LanguageModelV3StreamPart, LanguageModelV3StreamPart>({
          transform(part, controller) {
            if (!seen && part.type === 'text-delta') {
              seen = true;
              if (marker !== null) onFirstDelta(marker);
            }
            controller.enqueue(part);
          },
        }),
      );
      return { ...result, stream };
    },
  };
}
