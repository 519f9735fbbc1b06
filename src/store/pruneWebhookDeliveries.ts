import type { Queryable } from './db.js';
import type { PruneBatch } from './pruneBatches.js';

/**
 * One batch of webhook deliveries that are finished — `delivered`, or `dead` (retries
 * exhausted) — and were enqueued before `olderThan`, oldest first. Each holds a copy of a
 * journal event (a reply's text among them). A `pending` delivery is never removed: it
 * still has to be sent, and it is the order barrier of its session's later deliveries.
 * The state is checked again on the row being deleted, not only on the batch's snapshot.
 */
export async function pruneWebhookDeliveries(
  tx: Queryable,
  options: { olderThan: Date; tenant: string | null; batchSize: number },
): Promise<PruneBatch> {
  const deleted = await tx.query(
    `delete from webhook_deliveries d
      using (select delivery_id from webhook_deliveries
              where state <> 'pending' and created_at < $1
                and ($2::text is null or tenant = $2)
              order by created_at
              limit $3
              for update skip locked) old
      where d.delivery_id = old.delivery_id and d.state <> 'pending'`,
    [options.olderThan, options.tenant, options.batchSize],
  );
  return {
    removed: { webhook_deliveries: deleted.rowCount },
    done: deleted.rowCount < options.batchSize,
  };
}
