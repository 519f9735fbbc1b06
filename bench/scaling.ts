/**
 * `npm run bench:scaling`: turns/s and CPU per turn for 1, 2 and 4 `parley worker`
 * processes × 1 and 2 `parley api` processes on one PostgreSQL — the real CLI from dist/,
 * started and stopped for every measurement — and what the figures project for a machine
 * with more cores (docs/benchmarks.md, "Scaling with processes", writes the model down).
 * The table goes to stdout, progress to stderr, every figure to bench/results/scaling.json
 * and the chart to bench/results/scaling.svg.
 *
 * Environment:
 * - PARLEY_BENCH_DATABASE_URL: a PostgreSQL admin URL (a role that may create databases).
 *   Unset: `bash scripts/ensure-postgres.sh` is asked for one.
 * - PARLEY_BENCH_RUNS (default 3): rounds; each round measures every cell once (cells
 *   interleaved, so that a noisy minute does not land on one cell only); medians reported.
 * - PARLEY_BENCH_SCALING_SESSIONS (default 50), _TURNS (10 per session), _CONCURRENCY (8
 *   conversations in flight): the peer-shaped load of one measurement.
 * - PARLEY_BENCH_SCALING_WORKERS (default "1,2,4"), _APIS (default "1,2"): the matrix.
 * - PARLEY_BENCH_SCALING_OUT (default bench/results/scaling.json; the SVG goes beside it).
 * - PARLEY_BENCH_PEER_DIR: an installed copy of the peer (docs/benchmarks.md); it then runs
 *   once per round on the same PostgreSQL and is drawn as the reference line. Unset: the
 *   peer's figure of bench/results/latest.json, if that has one.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { stringify } from 'yaml';
import { childEnvironment, migrate, root } from '../scripts/soak/children.js';
import { freePort } from '../scripts/soak/postgres.js';
import { Slot, type SlotEnvironment } from '../scripts/soak/processes.js';
import { renderBarChart, scalingChart } from './charts.js';
import { PostgresCpu, processCpuMs } from './cpu.js';
import { freshDatabase, postgresAdminUrl } from './database.js';
import { closeClient } from './http.js';
import { peerReplyText, peerShapedLoad, runPeerOnce, type PeerShapedLoad } from './peer.js';
import { now } from './remote.js';
import { fmt, median, round } from './stats.js';
import { formatJson, machineFigures, revision } from './output.js';
import { scalingModel, type CpuPerTurn } from './scalingModel.js';

const numberList = (name: string, fallback: string) =>
  (process.env[name] ?? fallback).split(',').map((value) => {
    const parsed = Number(value);
    if (!Number.isInteger(parsed) || parsed < 1) throw new Error(`${name}: whole numbers ≥ 1`);
    return parsed;
  });
const wholeNumber = (name: string, fallback: number) => numberList(name, String(fallback))[0]!;

const runs = wholeNumber('PARLEY_BENCH_RUNS', 3);
const load = {
  threads: wholeNumber('PARLEY_BENCH_SCALING_SESSIONS', 50),
  turnsPerThread: wholeNumber('PARLEY_BENCH_SCALING_TURNS', 10),
  concurrency: wholeNumber('PARLEY_BENCH_SCALING_CONCURRENCY', 8),
};
const workerCounts = numberList('PARLEY_BENCH_SCALING_WORKERS', '1,2,4');
const apiCounts = numberList('PARLEY_BENCH_SCALING_APIS', '1,2');
/** The processes' `runtime.max_parallel_turns` (the configuration's default). */
const maxParallelTurns = 8;
/** Before each measurement: conversations × turns that warm the processes up (JIT, pools). */
const warmup = { threads: load.concurrency, turnsPerThread: 2, concurrency: load.concurrency };
/** The unloaded turn: one conversation, turns one after the other. */
const single = { threads: 1, turnsPerThread: 20, concurrency: 1 };

function progress(text: string): void {
  process.stderr.write(`bench:scaling: ${text}\n`);
}

/**
 * The processes' configuration: the defaults (docs/configuration.md) on 127.0.0.1 in dev
 * mode, and an agent on the demo model whose instructions make it answer the peer's
 * ~400-character reply to every turn, word by word, at once (PARLEY_DEMO_DELAY_MS=0).
 */
function writeConfig(directory: string): string {
  const path = join(directory, 'parley.yaml');
  const config = {
    server: { host: '127.0.0.1' },
    runtime: { max_parallel_turns: maxParallelTurns },
    agents: { default: { model: 'demo/echo', instructions: `/answer ${peerReplyText}` } },
  };
  writeFileSync(path, stringify(config));
  return path;
}

interface CellRun extends PeerShapedLoad {
  /** The unloaded turn (one conversation alone), p50 ms. */
  single_turn_p50_ms: number;
  cpu_ms: { api: number; worker: number; client: number; postgres: number | null };
  cpu_ms_per_turn: CpuPerTurn;
  /** PostgreSQL's split: the database's backends, the server-wide background processes. */
  postgres_backends_cpu_ms_per_turn: number | null;
  postgres_background_cpu_ms_per_turn: number | null;
  /** The whole PostgreSQL server's CPU per turn (every database on it; see bench/cpu.ts). */
  postgres_cluster_cpu_ms_per_turn: number | null;
}

/**
 * One measurement of one cell: start the processes (API processes on fresh ports, all
 * waited for until ready), warm up, measure the unloaded turn, then the peer-shaped load
 * round-robin over the API processes with every process's CPU read around it; then
 * SIGTERM them all and wait for their exits.
 */
async function measureCell(
  environment: SlotEnvironment,
  probe: pg.Client,
  workers: number,
  apis: number,
): Promise<CellRun> {
  const apiSlots = await Promise.all(
    Array.from({ length: apis }, async (_, index) => {
      return new Slot('api', index, await freePort(), environment);
    }),
  );
  const workerSlots = Array.from(
    { length: workers },
    (_, index) => new Slot('worker', index, null, environment),
  );
  const slots = [...apiSlots, ...workerSlots];
  try {
    await Promise.all(slots.map((slot) => slot.start()));
    const urls = apiSlots.map((slot) => new URL(slot.url as string));
    const target = { urlFor: (conversation: number) => urls[conversation % urls.length] as URL };
    await peerShapedLoad(target, warmup);
    const alone = await peerShapedLoad(target, single);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const cpuOf = (group: Slot[]) =>
      group.reduce((sum, slot) => sum + (processCpuMs(slot.pid as number) ?? Number.NaN), 0);
    const postgres = new PostgresCpu(probe);
    await postgres.start();
    const before = { api: cpuOf(apiSlots), worker: cpuOf(workerSlots), client: process.cpuUsage() };
    const polling = setInterval(() => void postgres.poll().catch(() => {}), 500);
    let measured: PeerShapedLoad;
    try {
      measured = await peerShapedLoad(target, load);
      // What follows the last `done` (the lease's release, the next empty claim) is the
      // turns' work too.
      await new Promise((resolve) => setTimeout(resolve, 100));
    } finally {
      clearInterval(polling);
    }
    const client = process.cpuUsage(before.client);
    const pgCpu = await postgres.stop();
    const cpu = {
      api: cpuOf(apiSlots) - before.api,
      worker: cpuOf(workerSlots) - before.worker,
      client: (client.user + client.system) / 1000,
      postgres: pgCpu.own_ms,
    };
    const turns = measured.turns;
    const perTurn = (ms: number | null) => (ms === null ? null : round(ms / turns, 3));
    for (const slot of slots) {
      if (slot.unexpectedExits.length > 0) {
        throw new Error(
          `${slot.name} exited during the run: ${JSON.stringify(slot.unexpectedExits)}`,
        );
      }
    }
    return {
      ...measured,
      single_turn_p50_ms: alone.latency_p50_ms,
      cpu_ms: {
        api: round(cpu.api, 1),
        worker: round(cpu.worker, 1),
        client: round(cpu.client, 1),
        postgres: cpu.postgres === null ? null : round(cpu.postgres, 1),
      },
      cpu_ms_per_turn: {
        api: perTurn(cpu.api) as number,
        worker: perTurn(cpu.worker) as number,
        parley: perTurn(cpu.api + cpu.worker) as number,
        postgres: perTurn(cpu.postgres),
        client: perTurn(cpu.client) as number,
        all:
          cpu.postgres === null ? null : perTurn(cpu.api + cpu.worker + cpu.client + cpu.postgres),
      },
      postgres_backends_cpu_ms_per_turn: perTurn(pgCpu.backends_ms),
      postgres_background_cpu_ms_per_turn: perTurn(pgCpu.background_ms),
      postgres_cluster_cpu_ms_per_turn: perTurn(pgCpu.cluster_ms),
    };
  } finally {
    await Promise.all(slots.map((slot) => slot.terminate()));
    await Promise.all(slots.map((slot) => slot.close()));
  }
}

/**
 * PostgreSQL's commit ceiling on this machine: one-row autocommit inserts (one WAL flush
 * each, unless flushes are shared) from `connections` connections for `ms`; commits/s.
 * Concurrent commits share WAL flushes (group commit), so the figure grows with the
 * connections until the CPU, not the disk, binds.
 */
async function commitRate(url: string, connections: number, ms: number): Promise<number> {
  const clients = await Promise.all(
    Array.from({ length: connections }, async () => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      return client;
    }),
  );
  try {
    let commits = 0;
    const started = now();
    const until = started + ms;
    await Promise.all(
      clients.map(async (client) => {
        while (now() < until) {
          await client.query('insert into scaling_probe (note) values ($1)', ['probe']);
          commits += 1;
        }
      }),
    );
    return round(commits / ((now() - started) / 1000), 1);
  } finally {
    await Promise.all(clients.map((client) => client.end()));
  }
}

async function commitCeiling(url: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('create table scaling_probe (id bigserial primary key, note text)');
    const result: Record<string, number> = {};
    for (const connections of [1, 8, 32]) {
      progress(`commit ceiling: ${connections} connection(s)`);
      result[`connections_${connections}`] = await commitRate(url, connections, 2_000);
    }
    await client.query('drop table scaling_probe');
    return result;
  } finally {
    await client.end();
  }
}

type Cell = { workers: number; apis: number; runs: CellRun[] };

function summarise(cell: Cell) {
  const of = (get: (run: CellRun) => number | null) => {
    const values = cell.runs.map(get).filter((value): value is number => value !== null);
    return values.length === 0 ? null : round(median(values), 3);
  };
  return {
    workers: cell.workers,
    apis: cell.apis,
    turns_per_s: of((run) => run.turns_per_s) as number,
    latency_p50_ms: of((run) => run.latency_p50_ms) as number,
    latency_p99_ms: of((run) => run.latency_p99_ms) as number,
    single_turn_p50_ms: of((run) => run.single_turn_p50_ms) as number,
    cpu_ms_per_turn: {
      api: of((run) => run.cpu_ms_per_turn.api) as number,
      worker: of((run) => run.cpu_ms_per_turn.worker) as number,
      parley: of((run) => run.cpu_ms_per_turn.parley) as number,
      postgres: of((run) => run.cpu_ms_per_turn.postgres),
      client: of((run) => run.cpu_ms_per_turn.client) as number,
      all: of((run) => run.cpu_ms_per_turn.all),
    },
    postgres_backends_cpu_ms_per_turn: of((run) => run.postgres_backends_cpu_ms_per_turn),
    postgres_background_cpu_ms_per_turn: of((run) => run.postgres_background_cpu_ms_per_turn),
    postgres_cluster_cpu_ms_per_turn: of((run) => run.postgres_cluster_cpu_ms_per_turn),
    runs: cell.runs,
  };
}

type Summary = ReturnType<typeof summarise>;

/** The peer's turns/s to draw beside Parley's, and where it came from. */
function peerFromLatest(): { turns_per_s: number; source: string } | null {
  const path = join(root, 'bench', 'results', 'latest.json');
  if (!existsSync(path)) return null;
  try {
    const latest = JSON.parse(readFileSync(path, 'utf8'));
    const value = latest?.results?.postgres?.peer_shaped?.peer?.turns_per_s;
    if (typeof value !== 'number') return null;
    const commit =
      typeof latest.revision?.commit === 'string' ? latest.revision.commit.slice(0, 7) : '?';
    return {
      turns_per_s: value,
      source: `LangGraph peer, 100×10 at 8, bench/results/latest.json (${String(latest.date).slice(0, 10)}, ${commit})`,
    };
  } catch {
    return null;
  }
}

function table(cells: Summary[]): string {
  const header =
    '| workers | APIs | turns/s | turn p50 / p99 (ms) | CPU ms/turn: API | worker | PostgreSQL | client | all |';
  const lines = [header, '| --- | --- | --- | --- | --- | --- | --- | --- | --- |'];
  for (const cell of cells) {
    const cpu = cell.cpu_ms_per_turn;
    lines.push(
      `| ${cell.workers} | ${cell.apis} | ${fmt(cell.turns_per_s)} | ${fmt(cell.latency_p50_ms)} / ${fmt(cell.latency_p99_ms)} | ${fmt(cpu.api)} | ${fmt(cpu.worker)} | ${fmt(cpu.postgres)} | ${fmt(cpu.client)} | ${fmt(cpu.all)} |`,
    );
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  if (!existsSync(join(root, 'dist', 'cli', 'main.js'))) {
    throw new Error(
      'dist/cli/main.js is missing: npm run build first (npm run bench:scaling does)',
    );
  }
  const admin = postgresAdminUrl();
  if ('skipped' in admin) throw new Error(`no PostgreSQL: ${admin.skipped}`);
  const started = now();
  const loadBefore = loadavg();
  const database = await freshDatabase(admin.url, 'parley_scaling');
  const directory = mkdtempSync(join(tmpdir(), 'parley-scaling-'));
  const probe = new pg.Client({ connectionString: database.url });
  const peerDir = process.env.PARLEY_BENCH_PEER_DIR;
  const peerRuns: number[] = [];
  try {
    const logDir = join(directory, 'logs');
    mkdirSync(logDir);
    const env = childEnvironment({
      DATABASE_URL: database.url,
      PARLEY_CONFIG: writeConfig(directory),
      PARLEY_HOST: '127.0.0.1',
      PARLEY_DEMO_DELAY_MS: '0',
      PARLEY_LOG_LEVEL: 'warn',
    });
    progress(`database ${database.name}: migrating`);
    await migrate(env);
    await probe.connect();
    const ceiling = await commitCeiling(database.url);
    const cells: Cell[] = workerCounts.flatMap((workers) =>
      apiCounts.map((apis) => ({ workers, apis, runs: [] as CellRun[] })),
    );
    for (let run = 0; run < runs; run++) {
      for (const cell of cells) {
        progress(`round ${run + 1}/${runs}: ${cell.workers} worker(s), ${cell.apis} API(s)`);
        const result = await measureCell({ root, logDir, env }, probe, cell.workers, cell.apis);
        progress(
          `  ${fmt(result.turns_per_s)} turns/s, CPU ms/turn: Parley ${fmt(result.cpu_ms_per_turn.parley)}, PostgreSQL ${fmt(result.cpu_ms_per_turn.postgres)}, client ${fmt(result.cpu_ms_per_turn.client)}`,
        );
        cell.runs.push(result);
      }
      if (peerDir) {
        progress(`round ${run + 1}/${runs}: LangGraph peer`);
        peerRuns.push(Number((await runPeerOnce(peerDir, admin.url)).turns_per_s));
      }
    }
    const summaries = cells.map(summarise);
    const widest = summaries.reduce((best, cell) =>
      cell.workers * 10 + cell.apis > best.workers * 10 + best.apis ? cell : best,
    );
    const commitsPerTurn = commitsPerTurnFromLatest();
    const peer = peerDir
      ? {
          turns_per_s: round(median(peerRuns), 1),
          source: `LangGraph peer, 100×10 at 8, same PostgreSQL, median of ${peerRuns.length} runs`,
          runs: peerRuns,
        }
      : peerFromLatest();
    const machine = machineFigures(loadBefore);
    const report = {
      date: new Date().toISOString(),
      revision: revision(root),
      machine,
      method: {
        processes:
          'node dist/cli/main.js api / worker, configuration defaults (pool 10, max_parallel_turns 8), demo model at 0 ms per word answering the peer reply',
        load: { ...load, warmup, single },
        runs,
        cpu: 'utime+stime from /proc/PID/stat around the load; PostgreSQL: the database’s backends plus the server’s background processes (bench/cpu.ts)',
      },
      commit_ceiling_per_s: ceiling,
      cells: summaries,
      model: scalingModel(summaries, widest, {
        cores: cpus().length,
        commitCeiling: ceiling,
        commitsPerTurn,
        maxParallelTurns,
        loadConcurrency: load.concurrency,
      }),
      peer,
      total_seconds: round((now() - started) / 1000, 1),
    };
    const out =
      process.env.PARLEY_BENCH_SCALING_OUT ?? join(root, 'bench', 'results', 'scaling.json');
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, await formatJson(out, report));
    const svg = out.replace(/\.json$/, '') + '.svg';
    writeFileSync(svg, renderBarChart(scalingChart(report)));
    process.stdout.write(
      `\nParley scaling — ${machine.cpus} CPUs (${machine.cpu_model}), ${runs} runs per cell, ${load.threads} sessions × ${load.turnsPerThread} turns at ${load.concurrency}; load average ${machine.load_average_1m_before} before, ${machine.load_average_1m_after} after\n\n`,
    );
    process.stdout.write(`${table(summaries)}\n\n`);
    const { this_machine: here, projection } = report.model;
    process.stdout.write(
      `model on ${here.cores} cores: ${fmt(here.turns_per_s)} turns/s, bound by ${here.binding} (${Object.entries(
        here.terms,
      )
        .map(([name, value]) => `${name} ${fmt(value)}`)
        .join(', ')})\n`,
    );
    for (const cores of projection) {
      process.stdout.write(
        `projected on ${cores.cores} cores (${cores.workers} workers, ${cores.apis} APIs): ${fmt(cores.turns_per_s)} turns/s, bound by ${cores.binding}\n`,
      );
    }
    process.stdout.write(
      `commit ceiling: ${Object.entries(ceiling)
        .map(([name, value]) => `${name.replace('connections_', '')} conn ${fmt(value)}/s`)
        .join(', ')}\ntotal ${fmt(report.total_seconds)} s; ${out}, ${svg}\n`,
    );
  } finally {
    await probe.end().catch(() => {});
    closeClient();
    rmSync(directory, { recursive: true, force: true });
    await database.drop();
  }
}

/** Commits per turn as `npm run bench` counted them (peer-shaped, PostgreSQL); else 4. */
function commitsPerTurnFromLatest(): number {
  try {
    const latest = JSON.parse(readFileSync(join(root, 'bench', 'results', 'latest.json'), 'utf8'));
    const value = latest?.results?.postgres?.peer_shaped?.commits_per_turn;
    return typeof value === 'number' && value > 0 ? value : 4;
  } catch {
    return 4;
  }
}

main().catch((error: unknown) => {
  process.stderr.write(
    `bench:scaling failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exitCode = 1;
});
