import type { Queryable } from './db.js';

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
