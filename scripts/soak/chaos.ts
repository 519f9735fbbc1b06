import { sleep } from './http.js';
import type { PrivateCluster } from './postgres.js';
import type { Slot } from './processes.js';
import { describeAction, type ChaosAction } from './schedule.js';

export interface ChaosCounters {
  workerKills: number;
  /** Worker kills that hit a process holding at least one live lease (a turn in flight). */
  workerKillsMidTurn: number;
  workerStops: number;
  apiKills: number;
  postgresRestarts: number;
  /** Actions whose target role had no live process at that moment. */
  skipped: number;
}

export interface ChaosTargets {
  workers: Slot[];
  apis: Slot[];
  cluster: PrivateCluster;
  restartMode: 'fast' | 'immediate';
  /** Live leases a worker process holds now (-1 when the database cannot say). */
  leasesHeldBy: (pid: number) => Promise<number>;
  log: (line: string) => void;
}

/**
 * Runs the schedule against the real processes and the cluster: SIGKILL (the slot is
 * restarted after the planned delay), SIGSTOP past the lease (then SIGCONT), and one
 * PostgreSQL restart. Resolves when the last action is done and every process is back up.
 */
export async function runChaos(
  actions: ChaosAction[],
  targets: ChaosTargets,
): Promise<ChaosCounters> {
  const counters: ChaosCounters = {
    workerKills: 0,
    workerKillsMidTurn: 0,
    workerStops: 0,
    apiKills: 0,
    postgresRestarts: 0,
    skipped: 0,
  };
  const pending: Promise<void>[] = [];
  const start = Date.now();
  for (const action of actions) {
    const wait = start + action.atMs - Date.now();
    if (wait > 0) await sleep(wait);
    switch (action.kind) {
      case 'kill_worker':
      case 'kill_api': {
        const slots = action.kind === 'kill_worker' ? targets.workers : targets.apis;
        const slot = liveSlot(slots, action.target);
        if (!slot) {
          counters.skipped += 1;
          targets.log(`${describeAction(action)}: skipped, no live ${slots[0]?.role}`);
          break;
        }
        // A `serve` process holds leases too (its worker).
        const holds = slot.role !== 'api';
        const held = holds ? await targets.leasesHeldBy(slot.pid as number) : 0;
        await slot.kill();
        if (action.kind === 'kill_worker') {
          counters.workerKills += 1;
          if (held > 0) counters.workerKillsMidTurn += 1;
        } else {
          counters.apiKills += 1;
        }
        targets.log(
          `${describeAction(action)}: killed ${slot.name}${holds ? ` holding ${held} lease(s)` : ''}`,
        );
        pending.push(
          sleep(action.restartAfterMs)
            .then(() => slot.start())
            .catch((error: unknown) =>
              targets.log(`${slot.name} did not come back: ${(error as Error).message}`),
            ),
        );
        break;
      }
      case 'stop_worker': {
        const slot = liveSlot(targets.workers, action.target);
        if (!slot) {
          counters.skipped += 1;
          targets.log(`${describeAction(action)}: skipped, no live worker`);
          break;
        }
        slot.pause();
        counters.workerStops += 1;
        targets.log(`${describeAction(action)}: paused ${slot.name}`);
        pending.push(sleep(action.pausedMs).then(() => slot.resume()));
        break;
      }
      case 'restart_postgres': {
        const began = Date.now();
        await targets.cluster.restart(targets.restartMode);
        counters.postgresRestarts += 1;
        targets.log(
          `${describeAction(action)}: ${targets.restartMode} restart took ${Date.now() - began} ms`,
        );
        break;
      }
    }
  }
  await Promise.all(pending);
  return counters;
}

/** The planned target if it is up, else the next one of the same role that is. */
function liveSlot(slots: Slot[], target: number): Slot | null {
  for (let offset = 0; offset < slots.length; offset++) {
    const slot = slots[(target + offset) % slots.length] as Slot;
    if (slot.state === 'up') return slot;
  }
  return null;
}
