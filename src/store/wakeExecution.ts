import type { Queryable } from './db.js';

/**
 * Makes an execution due now: its turn (or an agent's answer to its request) just reached a
 * terminal event, so it need not wait for its re-check. Only a timer already set is
 * advanced: an execution waiting for a person stays as it is. Execution ids are unique per
 * tenant only, and a wake-up names the session whose journal woke it, not a tenant: the
 * execution is the one of that session's tenant (an iteration's turn is in the execution's
 * own session, an answering agent's in a session of the same tenant), never another
 * tenant's execution with the same id.
 */
export async function wakeExecution(
  db: Queryable,
  wake: { sessionId: string; executionId: string },
): Promise<boolean> {
  const woken = await db.query(
    {
      name: 'wake_execution',
      text: `update executions set next_run_at = now()
              where tenant = (select tenant from sessions where session_id = $2)
                and execution_id = $1 and ended_at is null and next_run_at > now()`,
    },
    [wake.executionId, wake.sessionId],
  );
  return woken.rowCount > 0;
}
