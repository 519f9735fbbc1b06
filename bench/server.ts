import { performance } from 'node:perf_hooks';
import type { LanguageModelV3, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/api/app.js';
import { compileConfig } from '../src/config/load.js';
import type { Config } from '../src/config/types.js';
import { createLogger } from '../src/log.js';
import { createModelRegistry } from '../src/providers/registry.js';
import { Worker } from '../src/runtime/worker.js';
import { builtInTools } from '../src/tools/registry.js';
import type { Db, Queryable, QueryResult } from '../src/store/db.js';
import { migrate } from '../src/store/migrate.js';
import { openPglite } from '../src/store/pglite.js';
import { openPostgres } from '../src/store/postgres.js';
import { Wakeups } from '../src/store/wakeups.js';

/**
 * The process under test: the same parts `startProcess` (src/cli/start.ts) composes for
 * `parley serve` (migrated store, one Wakeups subscription, the Fastify app listening on
 * 127.0.0.1:0, one Worker), with the production defaults of the configuration. Two
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
  /** Statement text (whitespace collapsed, first 90 characters) → executions. */
  byStatement: Map<string, number>;
}

export interface CounterSnapshot {
  queries: number;
  transactions: number;
  byStatement: Map<string, number>;
}

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
  return {
    queries: counters.queries,
    transactions: counters.transactions,
    byStatement: new Map(counters.byStatement),
  };
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
    },
    { PARLEY_DEMO_DELAY_MS: '0' },
    'bench',
  );
  const raw = config.storage.url
    ? await openPostgres(config.storage.url, config.storage.poolSize)
    : await openPglite(config.storage.dataDir);
  await migrate(raw);

  const counters: Counters = { queries: 0, transactions: 0, byStatement: new Map() };
  const deltaCommitted = new Map<string, number>();
  const db = countingDb(raw, counters, (key) => deltaCommitted.set(key, epochNow()));

  const log = createLogger({ level: 'warn', destination: process.stderr });
  const wakeups = new Wakeups(db);
  await wakeups.start();

  const modelFirstDelta = new Map<string, number>();
  const registries = new Map<number, ReturnType<typeof createModelRegistry>>();
  let delayMs = 0;
  const registryFor = (ms: number) => {
    let registry = registries.get(ms);
    if (!registry) {
      registry = createModelRegistry({ ...config, demo: { delayMs: ms } });
      registries.set(ms, registry);
    }
    return registry;
  };
  const resolveModel = (provider: string, modelId: string) =>
    observeModel(registryFor(delayMs)(provider, modelId), (marker) =>
      modelFirstDelta.set(marker, epochNow()),
    );

  const app: FastifyInstance = await buildApp({
    db,
    wakeups,
    config,
    log,
    providersReady: () => true,
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
      });
      worker.start();
    },
    stopWorker,
    async close() {
      await app.close();
      await stopWorker();
      await wakeups.stop();
      await raw.close();
    },
  };
}

function statementKey(text: string): string {
  return text.replace(/\s+/g, ' ').trim().slice(0, 90);
}

/**
 * Counts every statement the application issues (`query`, inside or outside a
 * transaction) and every transaction. BEGIN and COMMIT are issued by the engine adapters
 * themselves and are not in `queries`: a transaction costs two more round trips.
 */
function countingDb(inner: Db, counters: Counters, onDeltaCommitted: (key: string) => void): Db {
  const count = (text: string) => {
    counters.queries += 1;
    const key = statementKey(text);
    counters.byStatement.set(key, (counters.byStatement.get(key) ?? 0) + 1);
  };
  const wrap = (target: Queryable, deltas: string[] | null): Queryable => ({
    query<Row>(text: string, params?: unknown[]): Promise<QueryResult<Row>> {
      count(text);
      // insertEvents(tenant, sessionId, base, json): a text_delta batch is one event at base+1.
      if (deltas && params && params.length === 4 && text.includes('jsonb_array_elements')) {
        const json = params[3];
        if (typeof json === 'string' && json.includes('"type":"text_delta"')) {
          deltas.push(`${String(params[1])}:${Number(params[2]) + 1}`);
        }
      }
      return target.query<Row>(text, params);
    },
  });
  const root = wrap(inner, null);
  return {
    engine: inner.engine,
    query: <Row>(text: string, params?: unknown[]) => root.query<Row>(text, params),
    async transaction(work) {
      counters.transactions += 1;
      const deltas: string[] = [];
      const result = await inner.transaction((tx) => work(wrap(tx, deltas)));
      for (const key of deltas) onDeltaCommitted(key);
      return result;
    },
    listen: (channel, onPayload) => inner.listen(channel, onPayload),
    close: () => inner.close(),
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
