import type { Queryable } from './db.js';

/**
 * Asks the runner to cancel an execution (the scheduler's `overlap: cancel_previous`),
 * inside the caller's transaction; the runner then cancels it like any other.
 */
export async function requestCancel(
  tx: Queryable,
  execution: { tenant: string; executionId: string; commandId: string },
): Promise<void> {
  await tx.query(
    `update executions
        set cancel_command_id = coalesce(cancel_command_id, $3), next_run_at = now(),
            updated_at = now()
      where tenant = $1 and execution_id = $2 and ended_at is null`,
    [execution.tenant, execution.executionId, execution.commandId],
  );
}
