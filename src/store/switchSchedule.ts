import type { Db } from './db.js';

/**
 * Switches one of a tenant's schedules on or off (the `schedule_switches` table, migration
 * 0081); false when the tenant has no schedule of that name. The schedule's row is locked
 * first, as the scheduler's claim locks it (store/fireSchedules.ts): a fire under way
 * commits before the switch is written, and the scheduler's next claim reads the switch.
 */
export async function switchSchedule(
  db: Db,
  options: { tenant: string; name: string; enabled: boolean; user: string },
): Promise<boolean> {
  return db.transaction(async (tx) => {
    const found = await tx.query(
      'select 1 from schedules where name = $1 and tenant = $2 for update',
      [options.name, options.tenant],
    );
    if (found.rowCount === 0) return false;
    await tx.query(
      `insert into schedule_switches (name, tenant, enabled, updated_by)
       values ($1, $2, $3, $4)
       on conflict (name) do update
          set tenant = excluded.tenant, enabled = excluded.enabled,
              updated_by = excluded.updated_by, updated_at = now()`,
      [options.name, options.tenant, options.enabled, options.user],
    );
    return true;
  });
}
