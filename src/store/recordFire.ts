import type { Queryable } from './db.js';

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
