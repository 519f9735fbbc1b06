import type { Queryable } from './db.js';
import type { PruneBatch } from './pruneBatches.js';

/**
 * One batch of usage rows (one per provider call: tokens, cost, model; no text) recorded
 * before `olderThan`, oldest first. Billing reports over that period lose them: this rule
 * is off unless `retention.keep_usage_days` is set.
 */
export async function pruneUsage(
  tx: Queryable,
  options: { olderThan: Date; tenant: string | null; batchSize: number },
): Promise<PruneBatch> {
  const deleted = await tx.query(
    `delete from usage u
      using (select usage_id from usage
              where at < $1 and ($2::text is null or tenant = $2)
              order by at
              limit $3) old
      where u.usage_id = old.usage_id`,
    [options.olderThan, options.tenant, options.batchSize],
  );
  return { removed: { usage: deleted.rowCount }, done: deleted.rowCount < options.batchSize };
}
