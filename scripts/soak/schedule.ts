import { Random } from './random.js';

/**
 * The chaos schedule: what happens to which process, and when, as a pure function of the
 * seed (same seed → same schedule). Times are offsets from the start of the chaos phase.
 * A target is a slot index; when that slot is down or paused at the time, the executor
 * takes the next live one of the same role (and says so).
 */
export type ChaosAction =
  | { atMs: number; kind: 'kill_worker'; target: number; restartAfterMs: number }
  | { atMs: number; kind: 'stop_worker'; target: number; pausedMs: number }
  | { atMs: number; kind: 'kill_api'; target: number; restartAfterMs: number }
  | { atMs: number; kind: 'restart_postgres' };

export interface ChaosShape {
  durationMs: number;
  workers: number;
  apis: number;
  leaseTtlMs: number;
}

/** Mean intervals between actions of each kind (a Poisson process per kind). */
export const meanIntervalMs = {
  kill_worker: 6_000,
  stop_worker: 25_000,
  kill_api: 30_000,
} as const;

export function planChaos(seed: number, shape: ChaosShape): ChaosAction[] {
  const random = new Random(seed).fork('chaos');
  const actions: ChaosAction[] = [];
  // Nothing in the first and last seconds: the run starts and ends with every process up.
  const first = Math.min(2_000, shape.durationMs / 10);
  const last = shape.durationMs - Math.min(3_000, shape.durationMs / 10);

  const times = (mean: number): number[] => {
    const found: number[] = [];
    for (let at = first + random.exponential(mean); at < last; at += random.exponential(mean)) {
      found.push(Math.round(at));
    }
    // Every kind of failure happens at least once, however short the run.
    if (found.length === 0) found.push(Math.round(random.between(first, last)));
    return found;
  };

  for (const atMs of times(meanIntervalMs.kill_worker)) {
    actions.push({
      atMs,
      kind: 'kill_worker',
      target: random.int(0, shape.workers - 1),
      restartAfterMs: random.int(200, 3_000),
    });
  }
  for (const atMs of times(meanIntervalMs.stop_worker)) {
    // Paused for longer than the lease: another worker takes its sessions over, and the
    // paused one's writes after SIGCONT must be refused by the token gate.
    actions.push({
      atMs,
      kind: 'stop_worker',
      target: random.int(0, shape.workers - 1),
      pausedMs: Math.round(shape.leaseTtlMs * random.between(1.5, 3)),
    });
  }
  for (const atMs of times(meanIntervalMs.kill_api)) {
    actions.push({
      atMs,
      kind: 'kill_api',
      target: random.int(0, shape.apis - 1),
      restartAfterMs: random.int(500, 4_000),
    });
  }
  actions.push({
    atMs: Math.round(shape.durationMs * random.between(0.35, 0.65)),
    kind: 'restart_postgres',
  });
  return actions.sort((a, b) => a.atMs - b.atMs);
}

/** One line per action, for the run's log. */
export function describeAction(action: ChaosAction): string {
  const at = `${(action.atMs / 1000).toFixed(1)}s`;
  switch (action.kind) {
    case 'kill_worker':
      return `${at} SIGKILL worker ${action.target}, restart after ${action.restartAfterMs} ms`;
    case 'stop_worker':
      return `${at} SIGSTOP worker ${action.target} for ${action.pausedMs} ms`;
    case 'kill_api':
      return `${at} SIGKILL api ${action.target}, restart after ${action.restartAfterMs} ms`;
    case 'restart_postgres':
      return `${at} restart PostgreSQL`;
  }
}
