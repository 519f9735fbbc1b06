import type { Queryable } from './db.js';

/**
 * Makes an execution due now: its turn (or an agent's answer to its request) just reached a
 * terminal event, so it need not wait for its re-check. Only a timer already set is
 * advanced: an execution waiting for a person stays as it is. Execution ids are unique per
 * tenant only; a wake-up carries no tenant, and making a stranger's execution look one
 * step early is harmless (it finds its turn still running and sets its timer again).
 */
export async function wakeExecution(db: Queryable, executionId: string): Promise<boolean> {
  const woken = await db.query(
    {
      name: 'wake_execution',
      text: `update executions set next_run_at = now()
              where execution_id = $1 and ended_at is null and next_run_at > now()`,
    },
    [executionId],
  );
  return woken.rowCount > 0;
}
