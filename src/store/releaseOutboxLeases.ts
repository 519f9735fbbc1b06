import type { Db } from './db.js';
import { outboxes } from './outboxes.js';

/**
 * Ends every sender lease on the outboxes (platform replies, webhook deliveries). Only for
 * embedded storage at start: its data directory's lock proves that the process holding
 * them is gone, so its unsent messages go out at once instead of after the lease.
 */
export async function releaseOutboxLeases(db: Db): Promise<void> {
  for (const { table } of Object.values(outboxes)) {
    await db.query(
      `update ${table} set lease_token = null, lease_expires_at = null
        where lease_token is not null`,
    );
  }
}
