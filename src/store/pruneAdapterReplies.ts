import type { Queryable } from './db.js';
import type { PruneBatch } from './pruneBatches.js';

/**
 * One batch of platform outbox rows that are finished — `final` (no change will come) and
 * `delivered`, or `dead` — and last changed before `olderThan`, oldest first. Each holds
 * what the platform message showed (a reply's text). A pending row (not yet sent, or an
 * edit not yet shown) and a reply still receiving text are never removed; neither is the
 * thread's open reply. The platform's message itself is not touched.
 */
export async function pruneAdapterReplies(
  tx: Queryable,
  options: { olderThan: Date; tenant: string | null; batchSize: number },
): Promise<PruneBatch> {
  const deleted = await tx.query(
    `delete from adapter_replies r
      using (select reply_id from adapter_replies
              where state <> 'pending' and final and updated_at < $1
                and ($2::text is null or tenant = $2)
              order by updated_at
              limit $3
              for update skip locked) old
      where r.reply_id = old.reply_id and r.state <> 'pending' and r.final
        and not exists (select 1 from adapter_threads t where t.open_reply_id = r.reply_id)`,
    [options.olderThan, options.tenant, options.batchSize],
  );
  return {
    removed: { adapter_replies: deleted.rowCount },
    done: deleted.rowCount < options.batchSize,
  };
}
