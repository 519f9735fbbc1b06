import type { Db } from './db.js';

/**
 * Deletes a user's push config of a task, and with it (by foreign key) its deliveries,
 * sent or not: nothing more goes to its URL. False when there is no such config.
 */
export async function deleteA2aPushConfig(
  db: Db,
  input: { tenant: string; taskId: string; owner: string; configId: string },
): Promise<boolean> {
  const deleted = await db.query(
    `delete from a2a_push_configs
      where tenant = $1 and task_id = $2 and owner = $3 and config_id = $4`,
    [input.tenant, input.taskId, input.owner, input.configId],
  );
  return deleted.rowCount > 0;
}
