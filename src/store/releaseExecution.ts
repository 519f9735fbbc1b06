import type { ExecutionLease } from './claimExecutions.js';
import type { Queryable } from './db.js';

/**
 * Gives an execution back without deciding anything (shutdown, an unexpected failure): its
 * timer stays, so whoever claims it next does the step again — not before `retryAfterMs`,
 * so that a step that keeps failing does not spin.
 */
export async function releaseExecution(
  db: Queryable,
  lease: ExecutionLease,
  retryAfterMs = 0,
): Promise<void> {
  await db.query(
    `update executions
        set lease_token = null, lease_expires_at = null,
            next_run_at = case when next_run_at is null then null
                               else greatest(next_run_at,
                                             now() + $4::integer * interval '1 millisecond') end
      where tenant = $1 and execution_id = $2 and lease_token = $3`,
    [lease.tenant, lease.executionId, lease.token, retryAfterMs],
  );
}

/**
 * Expires every execution lease at once. Only for embedded storage at start, where the data
 * directory's lock proves that the process which held them is gone. The one write on
 * executions that names no tenant, on purpose: that process held leases of every tenant.
 */
export async function releaseDeadExecutionLeases(db: Queryable): Promise<number> {
  const released = await db.query(
    `update executions set lease_expires_at = now() - interval '1 millisecond'
      where lease_token is not null and lease_expires_at > now()`,
  );
  return released.rowCount;
}
