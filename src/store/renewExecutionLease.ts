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
