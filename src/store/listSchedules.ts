import type { ScheduleConfig } from '../config/types.js';
import type { Queryable } from './db.js';

export interface ScheduleListing {
  name: string;
  mission: string;
  cron: string;
  timezone: string;
  overlap: string;
  catch_up: string;
  next_fire_at: string | null;
  last_fire_at: string | null;
  last_execution_id: string | null;
}

/** A tenant's schedules with their next and last fire times (`parley schedules list`). */
export async function listSchedules(db: Queryable, tenant: string): Promise<ScheduleListing[]> {
  const found = await db.query<{
    name: string;
    definition: ScheduleConfig;
    next_fire_at: Date | null;
    last_fire_at: Date | null;
    last_execution_id: string | null;
  }>(
    `select s.name, s.definition, s.next_fire_at, s.last_fire_at,
            (select f.execution_id from schedule_fires f
              where f.schedule = s.name and f.execution_id is not null
              order by f.fire_time desc limit 1) as last_execution_id
       from schedules s where s.tenant = $1 order by s.name`,
    [tenant],
  );
  return found.rows.map((row) => ({
    name: row.name,
    mission: row.definition.mission,
    cron: row.definition.cron,
    timezone: row.definition.timezone,
    overlap: row.definition.overlap,
    catch_up: row.definition.catchUp,
    next_fire_at: row.next_fire_at?.toISOString() ?? null,
    last_fire_at: row.last_fire_at?.toISOString() ?? null,
    last_execution_id: row.last_execution_id,
  }));
}
