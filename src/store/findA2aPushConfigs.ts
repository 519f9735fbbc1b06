import type { Queryable } from './db.js';
import { a2aPushConfigColumns, type A2aPushConfigRow } from './saveA2aPushConfig.js';

/**
 * A user's push configs of a task, oldest first (`configId`: that one only). Another
 * user's configs of the same task are not among them.
 */
export async function findA2aPushConfigs(
  db: Queryable,
  input: { tenant: string; taskId: string; owner: string; configId?: string },
): Promise<A2aPushConfigRow[]> {
  const found = await db.query<A2aPushConfigRow>(
    `select ${a2aPushConfigColumns} from a2a_push_configs
      where tenant = $1 and task_id = $2 and owner = $3
        and ($4::text is null or config_id = $4)
      order by created_at, push_id`,
    [input.tenant, input.taskId, input.owner, input.configId ?? null],
  );
  return found.rows;
}
