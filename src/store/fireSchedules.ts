import type { ScheduleConfig } from '../config/types.js';
import type { Db, Queryable } from './db.js';

export interface ScheduleRow {
  name: string;
  tenant: string;
  definition: ScheduleConfig;
  next_fire_at: Date;
  last_fire_at: Date | null;
}

/**
 * The scheduler's claim: in ONE transaction, locks the schedules whose fire time has come
 * (`next_fire_at <= now`, `now` from the scheduler's clock) with FOR UPDATE SKIP LOCKED
 * over the `schedules_due` partial index — concurrent schedulers never block each other
 * and never see the same row — lets `fire` start that schedule's executions in the same
 * transaction, and moves its timer. A schedule switched off (`schedule_switches`) is
 * neither locked nor fired, and its timer stays: once switched on again, the fire times
 * that passed meanwhile are missed ones, which its `catch_up` decides about. A crash anywhere rolls all of it back: the fire is
 * done again, whole, by whoever comes next. The primary key of `schedule_fires` makes one
 * execution per (schedule, fire time) whatever happens.
 */
export async function fireSchedules(
  db: Db,
  options: { now: Date; limit: number },
  fire: (
    tx: Queryable,
    schedule: ScheduleRow,
  ) => Promise<{ nextFireAt: Date | null; lastFireAt: Date | null }>,
): Promise<number> {
  return db.transaction(async (tx) => {
    const due = await tx.query<ScheduleRow>(
      `select name, tenant, definition, next_fire_at, last_fire_at from schedules
        where next_fire_at <= $1
          and not exists (
                select 1 from schedule_switches w
                 where w.name = schedules.name and w.tenant = schedules.tenant
                   and not w.enabled)
        order by next_fire_at
        limit $2
        for update of schedules skip locked`,
      [options.now, options.limit],
    );
    for (const schedule of due.rows) {
      const moved = await fire(tx, schedule);
      await tx.query(
        `update schedules
            set next_fire_at = $2, last_fire_at = coalesce($3, last_fire_at), updated_at = now()
          where name = $1`,
        [schedule.name, moved.nextFireAt, moved.lastFireAt],
      );
    }
    return due.rows.length;
  });
}
