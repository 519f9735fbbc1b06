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
 * transaction, and moves its timer. A crash anywhere rolls all of it back: the fire is
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
        order by next_fire_at
        limit $2
        for update skip locked`,
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

/** Records a fire time; false if it was already recorded (then nothing must start). */
export async function recordFire(
  tx: Queryable,
  fire: {
    schedule: string;
    fireTime: Date;
    tenant: string;
    executionId: string | null;
    outcome: 'started' | 'queued' | 'skipped';
  },
): Promise<boolean> {
  const inserted = await tx.query(
    `insert into schedule_fires (schedule, fire_time, tenant, execution_id, outcome)
     values ($1, $2, $3, $4, $5) on conflict do nothing`,
    [fire.schedule, fire.fireTime, fire.tenant, fire.executionId, fire.outcome],
  );
  return inserted.rowCount > 0;
}

/**
 * A schedule's executions that have not ended, oldest first (for `overlap`). Locked: one
 * that is ending waits for this fire to commit, so its end then sees (and wakes) a
 * successor queued behind it.
 */
export async function activeScheduleExecutions(
  tx: Queryable,
  tenant: string,
  schedule: string,
): Promise<{ execution_id: string }[]> {
  const found = await tx.query<{ execution_id: string }>(
    `select execution_id from executions
      where tenant = $1 and schedule = $2 and ended_at is null and parent_execution_id is null
      order by created_at, execution_id
      for update`,
    [tenant, schedule],
  );
  return found.rows;
}

/** Milliseconds from `now` to the earliest future fire time (null: none). */
export async function msUntilNextFire(db: Queryable, now: Date): Promise<number | null> {
  const found = await db.query<{ next: Date | null }>(
    'select min(next_fire_at) as next from schedules where next_fire_at > $1',
    [now],
  );
  const next = found.rows[0]?.next;
  return next ? next.getTime() - now.getTime() : null;
}
