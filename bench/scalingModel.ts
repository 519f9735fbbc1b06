import { round } from './stats.js';

/** CPU milliseconds per turn of one cell, by process kind (null: not measured). */
export interface CpuPerTurn {
  api: number;
  worker: number;
  parley: number;
  postgres: number | null;
  client: number;
  all: number | null;
}

/** What the model reads of one cell of bench/results/scaling.json. */
export interface CellFigures {
  workers: number;
  apis: number;
  single_turn_p50_ms: number;
  cpu_ms_per_turn: CpuPerTurn;
}

/**
 * The model (docs/benchmarks.md, "Scaling with processes"): turns/s ≈ the least of
 * - `cpu`: cores × 1000 / CPU ms per turn of every process on the machine;
 * - `commits`: PostgreSQL's commit ceiling / commits per turn;
 * - `parallel_turns`: workers × max_parallel_turns / the unloaded turn's seconds;
 * - `worker_threads`, `api_threads`: a Node process is one thread, so workers × 1000 /
 *   worker CPU ms per turn, and the same for the API processes.
 *
 * CPU per turn is not constant in the process count: every process LISTENs and receives
 * every wake-up (each carries its events), and PostgreSQL delivers each one to every
 * listener. So the server's CPU per turn (Parley + PostgreSQL, no load client) is fitted
 * over the cells as `fixed + per_process × processes` (least squares), and a projection
 * sizes the processes to its throughput and recomputes that cost until they agree.
 * Worker and API CPU per turn, and the unloaded turn, are the widest cell's. The load
 * client counts on this machine (it shares the cores), not in a projection (it runs
 * elsewhere).
 */
export function scalingModel(
  cells: CellFigures[],
  widest: CellFigures,
  settings: {
    cores: number;
    commitCeiling: Record<string, number>;
    commitsPerTurn: number;
    maxParallelTurns: number;
    loadConcurrency: number;
  },
) {
  const cpu = widest.cpu_ms_per_turn;
  const single = widest.single_turn_p50_ms / 1000;
  const commitCeiling = Math.max(...Object.values(settings.commitCeiling));
  const fit = fitServerCpu(cells);
  const terms = (cores: number, workers: number, apis: number, cpuMs: number | null) => {
    const found = {
      cpu: cpuMs === null ? null : round((cores * 1000) / cpuMs, 1),
      commits: round(commitCeiling / settings.commitsPerTurn, 1),
      parallel_turns: round((workers * settings.maxParallelTurns) / single, 1),
      worker_threads: round((workers * 1000) / cpu.worker, 1),
      api_threads: round((apis * 1000) / cpu.api, 1),
    };
    const bound = Object.entries(found)
      .filter((entry): entry is [string, number] => entry[1] !== null)
      .sort((a, b) => a[1] - b[1])[0] as [string, number];
    return { terms: found, turns_per_s: bound[1], binding: bound[0] };
  };
  const projection = [8, 32].map((cores) => {
    let workers = widest.workers;
    let apis = widest.apis;
    let serverCpu: number | null = null;
    if (fit) {
      for (let step = 0; step < 50; step++) {
        serverCpu = fit.fixed_ms + fit.per_process_ms * (workers + apis);
        const throughput = (cores * 1000) / serverCpu;
        const nextWorkers = Math.max(1, Math.ceil((throughput * cpu.worker) / 1000));
        const nextApis = Math.max(1, Math.ceil((throughput * cpu.api) / 1000));
        if (nextWorkers === workers && nextApis === apis) break;
        workers = nextWorkers;
        apis = nextApis;
      }
    }
    return {
      cores,
      workers,
      apis,
      server_cpu_ms_per_turn: serverCpu === null ? null : round(serverCpu, 2),
      ...terms(cores, workers, apis, serverCpu),
    };
  });
  return {
    inputs: {
      cell: `${widest.workers} workers × ${widest.apis} APIs`,
      cpu_ms_per_turn: cpu,
      server_cpu_fit: fit,
      single_turn_ms: widest.single_turn_p50_ms,
      commit_ceiling_per_s: commitCeiling,
      commits_per_turn: settings.commitsPerTurn,
      max_parallel_turns: settings.maxParallelTurns,
      load_concurrency: settings.loadConcurrency,
    },
    this_machine: {
      cores: settings.cores,
      ...terms(settings.cores, widest.workers, widest.apis, cpu.all),
      load_concurrency_bound: round(settings.loadConcurrency / single, 1),
    },
    projection,
  };
}

/** Server CPU ms per turn (Parley + PostgreSQL) = fixed + per_process × processes. */
function fitServerCpu(cells: CellFigures[]) {
  const points = cells.flatMap((cell) =>
    cell.cpu_ms_per_turn.postgres === null
      ? []
      : [
          {
            x: cell.workers + cell.apis,
            y: cell.cpu_ms_per_turn.parley + cell.cpu_ms_per_turn.postgres,
          },
        ],
  );
  const xs = new Set(points.map((point) => point.x));
  if (points.length === 0) return null;
  const meanX = points.reduce((sum, point) => sum + point.x, 0) / points.length;
  const meanY = points.reduce((sum, point) => sum + point.y, 0) / points.length;
  const spread = points.reduce((sum, point) => sum + (point.x - meanX) ** 2, 0);
  const slope =
    xs.size < 2
      ? 0
      : Math.max(
          0,
          points.reduce((sum, point) => sum + (point.x - meanX) * (point.y - meanY), 0) / spread,
        );
  return {
    fixed_ms: round(meanY - slope * meanX, 2),
    per_process_ms: round(slope, 2),
    points: points.length,
  };
}
