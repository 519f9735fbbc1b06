import type { Queryable } from './db.js';
import type { ExecutionLease } from './claimExecutions.js';

/** Extends an execution's lease (token-gated); false if it is no longer ours. */
export async function renewExecutionLease(
  db: Queryable,
  lease: ExecutionLease,
  ttlMs: number,
): Promise<boolean> {
  const renewed = await db.query(
    `update executions set lease_expires_at = now() + $4::integer * interval '1 millisecond'
      where tenant = $1 and execution_id = $2 and lease_token = $3`,
    [lease.tenant, lease.executionId, lease.token, ttlMs],
  );
  return renewed.rowCount > 0;
}

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
