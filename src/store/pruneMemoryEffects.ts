import type { Queryable } from './db.js';
import type { PruneBatch } from './pruneBatches.js';

/**
 * One batch of memory effect records (an id per `remember` or `forget` applied; no text)
 * applied before `olderThan`. A record guards against applying its effect twice, which
 * can only happen to the commit that applied it: a committed turn's effects are never
 * applied again, so an old record guards nothing. The memories themselves stay.
 */
export async function pruneMemoryEffects(
  tx: Queryable,
  options: { olderThan: Date; tenant: string | null; batchSize: number },
): Promise<PruneBatch> {
  const deleted = await tx.query(
    `delete from memory_effects m
      using (select effect_id from memory_effects
              where applied_at < $1 and ($2::text is null or tenant = $2)
              order by applied_at
              limit $3) old
      where m.effect_id = old.effect_id`,
    [options.olderThan, options.tenant, options.batchSize],
  );
  return {
    removed: { memory_effects: deleted.rowCount },
    done: deleted.rowCount < options.batchSize,
  };
}
