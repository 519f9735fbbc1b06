import type { ScheduleConfig } from '../config/types.js';
import { fireTimesBetween, parseCron } from './cron.js';
import { dispatchOf } from './dispatch.js';
import { checkMissionInput } from './input.js';
import { activeScheduleExecutions } from '../store/activeScheduleExecutions.js';
import { requestCancel } from '../store/requestCancel.js';
import { createExecutionIn } from '../store/createExecution.js';
import type { Queryable } from '../store/db.js';
import { fireSchedules, type ScheduleRow } from '../store/fireSchedules.js';
import { msUntilNextFire } from '../store/msUntilNextFire.js';
import { recordFire } from '../store/recordFire.js';
import { seedSchedules } from '../store/seedSchedules.js';
import { startTimedLoop, type TimedLoop } from '../work/timedLoop.js';
import type { ExecutionDeps } from './deps.js';

/** Schedules fired per transaction: it holds their row locks, keep it short. */
const batch = 10;

/**
 * Fire times of one schedule started per transaction. A catch-up of many fire times is
 * many short transactions, each committing its progress: one transaction for all of them
 * grows with the backlog, holds the schedule's and its executions' rows the whole time, and
 * under load a process killed or paused before its commit loses all of it — the next
 * scheduler then starts the same, larger, transaction again.
 */
const firesPerTransaction = 1;

/**
 * The durable scheduler (worker role). Each tick fires the schedules whose time has come
 * (store/fireSchedules.ts: one transaction, SKIP LOCKED, a unique key per fire time), then
 * sleeps until the next fire time or the poll interval. Missed fire times — the scheduler
 * was down, or late by more than `schedule_grace_ms` — follow the schedule's `catch_up`:
 * `none` skips them, `one` starts one execution for all of them (unless an on-time fire
 * does), `all` starts one per fire time (at most `max_catch_up_fires`, the newest). An
 * execution still running when the next fire comes follows `overlap`: `skip` records the
 * fire and starts nothing, `queue` starts it after the running one ends,
 * `cancel_previous` cancels the running one and starts the new one.
 *
 * The clock is injected (tests freeze and advance it); executions' own timers use the
 * database's clock.
 */
export class Scheduler {
  private loop: TimedLoop | null = null;

  constructor(private readonly deps: ExecutionDeps) {}

  private now(): Date {
    return this.deps.now?.() ?? new Date();
  }

  /**
   * Runs on the engine's timed loop (src/work/timedLoop.ts): each round is a tick, then a
   * sleep until the next fire time or the poll interval.
   */
  start(): void {
    this.loop ??= startTimedLoop({
      name: 'schedules',
      log: this.deps.log,
      pollMs: this.deps.config.runtime.pollMs,
      minSleepMs: 1,
      round: async () => {
        await this.tick();
        return { dueMs: await msUntilNextFire(this.deps.db, this.now()) };
      },
    });
  }

  async stop(): Promise<void> {
    await this.loop?.stop();
  }

  /**
   * Fires everything due now, a transaction at a time, until nothing due is left (a
   * schedule with fire times still to catch up stays due); returns how many times a
   * schedule fired.
   */
  async tick(): Promise<number> {
    const now = this.now();
    let total = 0;
    for (;;) {
      const fired = await fireSchedules(this.deps.db, { now, limit: batch }, (tx, schedule) =>
        this.fire(tx, schedule, now),
      );
      total += fired;
      if (fired === 0) return total;
    }
  }

  private async fire(
    tx: Queryable,
    row: ScheduleRow,
    now: Date,
  ): Promise<{ nextFireAt: Date | null; lastFireAt: Date | null }> {
    const schedule = row.definition;
    const { scheduleGraceMs, maxCatchUpFires } = this.deps.config.runtime;
    let cron;
    try {
      cron = parseCron(schedule.cron, schedule.timezone);
    } catch {
      // Checked at start; a stored definition from an older version might not parse.
      this.deps.log.error({ schedule: row.name }, 'schedule has an invalid cron; disabled');
      return { nextFireAt: null, lastFireAt: null };
    }
    const times = [
      row.next_fire_at,
      ...fireTimesBetween(cron, row.next_fire_at, now, maxCatchUpFires),
    ];
    const onTime = times.filter((time) => now.getTime() - time.getTime() <= scheduleGraceMs);
    const missed = times.filter((time) => now.getTime() - time.getTime() > scheduleGraceMs);
    const toFire =
      schedule.catchUp === 'none'
        ? onTime
        : schedule.catchUp === 'one'
          ? onTime.length > 0
            ? onTime
            : missed.slice(-1)
          : [...missed, ...onTime].slice(-maxCatchUpFires);
    if (missed.length > 0) {
      this.deps.log.info(
        { schedule: row.name, missed: missed.length, catch_up: schedule.catchUp },
        'schedule missed fire times',
      );
    }
    const firing = toFire.slice(0, firesPerTransaction);
    for (const time of firing) await this.fireOnce(tx, schedule, time);
    // The rest stay due: the schedule's next fire time is the first of them.
    const rest = toFire[firing.length];
    return { nextFireAt: rest ?? cron.next(now), lastFireAt: firing[firing.length - 1] ?? null };
  }

  private async fireOnce(tx: Queryable, schedule: ScheduleConfig, fireTime: Date): Promise<void> {
    const executionId = `sched.${schedule.name}.${Math.floor(fireTime.getTime() / 1000)}`;
    const fire = { schedule: schedule.name, fireTime, tenant: schedule.tenant };
    const mission = this.deps.missions.get(schedule.tenant, schedule.mission);
    const problem = mission
      ? checkMissionInput(mission.inputSchema, schedule.input)
      : `no mission named "${schedule.mission}"`;
    if (!mission || problem !== null) {
      this.deps.log.error({ schedule: schedule.name, problem }, 'schedule cannot fire; skipped');
      await recordFire(tx, { ...fire, executionId: null, outcome: 'skipped' });
      return;
    }
    const active = await activeScheduleExecutions(tx, schedule.tenant, schedule.name);
    let after: string | null = null;
    if (active.length > 0) {
      if (schedule.overlap === 'skip') {
        await recordFire(tx, { ...fire, executionId: null, outcome: 'skipped' });
        return;
      }
      if (schedule.overlap === 'queue') {
        after = (active[active.length - 1] as { execution_id: string }).execution_id;
      } else {
        for (const previous of active) {
          await requestCancel(tx, {
            tenant: schedule.tenant,
            executionId: previous.execution_id,
            commandId: `${executionId}.cancel`,
          });
        }
      }
    }
    const recorded = await recordFire(tx, {
      ...fire,
      executionId,
      outcome: after === null ? 'started' : 'queued',
    });
    if (!recorded) return;
    await createExecutionIn(tx, {
      ...dispatchOf(
        mission,
        {
          tenant: schedule.tenant,
          executionId,
          user: schedule.user,
          agent: mission.agent,
          input: schedule.input,
          threads: null,
          priority: null,
          timeoutSeconds: null,
          missionRevision: this.deps.missions.revision?.(schedule.tenant, mission.name) ?? null,
        },
        (name) => this.deps.agents.get(schedule.tenant, name)?.visibility ?? 'tenant',
      ),
      schedule: { name: schedule.name, fireTime },
      afterExecutionId: after,
    });
  }
}

/** Seeds the configuration's schedules (every process, at start). */
export async function seedConfiguredSchedules(
  deps: Pick<ExecutionDeps, 'db' | 'config' | 'now'>,
): Promise<void> {
  const now = deps.now?.() ?? new Date();
  await seedSchedules(
    deps.db,
    Object.values(deps.config.schedules).map((config) => ({
      config,
      firstFireAt: parseCron(config.cron, config.timezone).next(now),
    })),
  );
}
