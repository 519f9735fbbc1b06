import { createHash } from 'node:crypto';
import type { ScheduleConfig } from '../config/types.js';
import type { Db } from './db.js';
import { jsonbOrder } from './eventRows.js';

/**
 * Makes the `schedules` table what the configuration says, at start: new schedules get
 * their first fire time, a schedule whose definition changed (cron, time zone, mission…)
 * starts over from its next fire time after `now`, an unchanged one keeps its timer (so a
 * restart after downtime still sees the fires it missed), and removed ones are deleted
 * with their switches (an operator's on/off, kept across a changed definition).
 * Every process seeds the same way, so concurrent starts agree.
 */
export async function seedSchedules(
  db: Db,
  schedules: { config: ScheduleConfig; firstFireAt: Date | null }[],
): Promise<void> {
  await db.transaction(async (tx) => {
    for (const { config, firstFireAt } of schedules) {
      const definition = jsonbOrder(config);
      const hash = createHash('sha256').update(JSON.stringify(definition)).digest('hex');
      await tx.query(
        `insert into schedules (name, tenant, definition, content_hash, next_fire_at)
         values ($1, $2, $3, $4, $5)
         on conflict (name) do update
            set tenant = excluded.tenant, definition = excluded.definition,
                content_hash = excluded.content_hash, next_fire_at = excluded.next_fire_at,
                updated_at = now()
          where schedules.content_hash <> excluded.content_hash`,
        [config.name, config.tenant, JSON.stringify(definition), hash, firstFireAt],
      );
    }
    const names = schedules.map((schedule) => schedule.config.name);
    await tx.query('delete from schedules where not (name = any($1::text[]))', [names]);
    // A switch goes with its schedule: one configured again later starts enabled.
    await tx.query('delete from schedule_switches where not (name = any($1::text[]))', [names]);
  });
}
