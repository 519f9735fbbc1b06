import type { Db } from './db.js';
import { outboxes } from './outboxes.js';

/**
 * Ends every sender lease on the outboxes (platform replies, webhook deliveries) now. Only
 * for embedded storage at start: its data directory's lock proves that the process holding
 * them is gone, so its unsent messages go out at once instead of after the lease. The
 * token stays: the next claim still sees that an earlier sender took the row and recorded
 * nothing (`interrupted`, claimOutbox.ts), so a platform reply is read back before it is
 * posted again — the dead sender may have posted it.
 */
export async function releaseOutboxLeases(db: Db): Promise<void> {
  for (const { table } of Object.values(outboxes)) {
    await db.query(
      `update ${table} set lease_expires_at = now()
        where lease_token is not null and lease_expires_at > now()`,
    );
  }
}
