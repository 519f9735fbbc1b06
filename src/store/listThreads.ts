import type { Queryable } from './db.js';
import type { ExecutionRow } from './getExecution.js';

/** A fan-out execution's threads, in dispatch order (ids `PARENT.1`, `PARENT.2`, ...). */
export async function listThreads(
  db: Queryable,
  parent: Pick<ExecutionRow, 'tenant' | 'execution_id'>,
): Promise<ExecutionRow[]> {
  const found = await db.query<ExecutionRow>(
    `select * from executions where tenant = $1 and parent_execution_id = $2
      order by length(execution_id), execution_id`,
    [parent.tenant, parent.execution_id],
  );
  return found.rows;
}
