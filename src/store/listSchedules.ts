import type { ScheduleConfig } from '../config/types.js';
import type { Queryable } from './db.js';

export interface ScheduleListing {
  name: string;
  mission: string;
  cron: string;
  timezone: string;
  overlap: string;
  catch_up: string;
  /** False while switched off (PATCH /api/v1/schedules/{name}): it does not fire. */
  enabled: boolean;
  next_fire_at: string | null;
  last_fire_at: string | null;
  last_execution_id: string | null;
}

/**
 * A tenant's schedules with their switch and their next and last fire times (`parley
 * schedules list`); `name` narrows it to that one.
 */
export async function listSchedules(
  db: Queryable,
  tenant: string,
  name: string | null = null,
): Promise<ScheduleListing[]> {
  const found = await db.query<{
    name: string;
    definition: ScheduleConfig;
    enabled: boolean;
    next_fire_at: Date | null;
    last_fire_at: Date | null;
    last_execution_id: string | null;
  }>(
    `select s.name, s.definition, s.next_fire_at, s.last_fire_at,
            coalesce(w.enabled, true) as enabled,
            (select f.execution_id from schedule_fires f
              where f.schedule = s.name and f.execution_id is not null
              order by f.fire_time desc limit 1) as last_execution_id
       from schedules s
       left join schedule_switches w on w.name = s.name and w.tenant = s.tenant
      where s.tenant = $1 and ($2::text is null or s.name = $2)
      order by s.name`,
    [tenant, name],
  );
  return found.rows.map((row) => ({
    name: row.name,
    mission: row.definition.mission,
    cron: row.definition.cron,
    timezone: row.definition.timezone,
    overlap: row.definition.overlap,
    catch_up: row.definition.catchUp,
    enabled: row.enabled,
    next_fire_at: row.next_fire_at?.toISOString() ?? null,
    last_fire_at: row.last_fire_at?.toISOString() ?? null,
    last_execution_id: row.last_execution_id,
  }));
}
