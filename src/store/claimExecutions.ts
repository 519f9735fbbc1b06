import type { Queryable, Statement } from './db.js';
import type { ExecutionRow } from './getExecution.js';

/** The right to advance one execution, for as long as the token is still on its row. */
export interface ExecutionLease {
  tenant: string;
  executionId: string;
  token: string;
}

/** A claimed execution, and whether its timeout has passed (by the database's clock). */
export type ClaimedExecution = ExecutionRow & { timed_out: boolean };

const claimStatement: Statement = {
  name: 'claim_executions',
  text: `
    update executions x
       set lease_token = $1,
           lease_owner = $2,
           lease_expires_at = now() + $3::integer * interval '1 millisecond',
           claim_count = x.claim_count + 1
      from (select tenant, execution_id
              from executions
             where next_run_at <= now()
               and (lease_expires_at is null or lease_expires_at < now())
             order by next_run_at
             limit $4
             for update skip locked) due
     where x.tenant = due.tenant and x.execution_id = due.execution_id
     returning x.*, x.timeout_at is not null and x.timeout_at <= now() as timed_out`,
};

/**
 * Claims up to `limit` due executions (`next_run_at <= now()`) whose lease is free or
 * expired, like claimSession: one short statement, SKIP LOCKED so claimers never block each
 * other, the `executions_due` partial index so rows without a timer cost nothing. An
 * expired lease is claimable, which makes this the recovery sweep for a dead worker's
 * executions: their timer is still on the row. The batch shares one token; every write
 * is gated on (execution, token).
 */
export async function claimExecutions(
  db: Queryable,
  claim: { token: string; owner: string; ttlMs: number; limit: number },
): Promise<ClaimedExecution[]> {
  const claimed = await db.query<ClaimedExecution>(claimStatement, [
    claim.token,
    claim.owner,
    claim.ttlMs,
    claim.limit,
  ]);
  return claimed.rows;
}

/** A token-gated execution write applied nothing: another worker advances it now. */
export class ExecutionLeaseLostError extends Error {
  constructor(readonly executionId: string) {
    super(`lease lost on execution ${executionId}`);
    this.name = 'ExecutionLeaseLostError';
  }
}

/**
 * Locks the execution's row if `lease` still holds it, inside a writer's transaction that
 * must not apply otherwise (an iteration's admission); throws ExecutionLeaseLostError if
 * the token is gone (another worker claimed it, or a cancel ended it).
 */
export async function holdExecutionLease(tx: Queryable, lease: ExecutionLease): Promise<void> {
  const held = await tx.query(
    `select 1 from executions
      where tenant = $1 and execution_id = $2 and lease_token = $3
      for update`,
    [lease.tenant, lease.executionId, lease.token],
  );
  if (held.rows.length === 0) throw new ExecutionLeaseLostError(lease.executionId);
}
