import type { Db } from './db.js';

/**
 * The outcome of one POST of a delivery, written only while the sender holds its lease:
 * delivered, or failed (an attempt counted, the next one after `nextAfterMs`; past the
 * endpoint's last attempt the delivery is dead-lettered, kept with its last error).
 */
export async function recordWebhookAttempt(
  db: Db,
  input: {
    deliveryId: string;
    token: string;
    status: number | null;
    delivered: boolean;
    error: string | null;
    nextAfterMs: number;
    maxAttempts: number;
  },
): Promise<boolean> {
  const updated = await db.query(
    `update webhook_deliveries
        set attempts = attempts + 1, last_status = $3,
            last_error = $5,
            state = case when $4 then 'delivered'
                         when attempts + 1 >= $7 then 'dead'
                         else 'pending' end,
            delivered_at = case when $4 then now() else delivered_at end,
            next_attempt_at = now() + $6 * interval '1 millisecond',
            lease_token = null, lease_expires_at = null
      where delivery_id = $1 and lease_token = $2`,
    [
      input.deliveryId,
      input.token,
      input.status,
      input.delivered,
      input.error?.slice(0, 500) ?? null,
      input.nextAfterMs,
      input.maxAttempts,
    ],
  );
  return updated.rowCount > 0;
}
