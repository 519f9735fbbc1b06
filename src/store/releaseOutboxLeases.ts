import type { Db } from './db.js';

/**
 * Ends every sender lease on the platform outbox and the webhook deliveries. Only for
 * embedded storage at start: its data directory's lock proves that the process holding
 * them is gone, so its unsent messages go out at once instead of after the lease.
 */
export async function releaseOutboxLeases(db: Db): Promise<void> {
  await db.query(
    `update adapter_replies set lease_token = null, lease_expires_at = null
      where lease_token is not null`,
  );
  await db.query(
    `update webhook_deliveries set lease_token = null, lease_expires_at = null
      where lease_token is not null`,
  );
}
