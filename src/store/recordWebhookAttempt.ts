import type { Db } from './db.js';
import { recordOutboxFailure } from './recordOutboxFailure.js';

/**
 * The outcome of one POST of a delivery, written only while the sender holds its lease:
 * delivered, or failed (recordOutboxFailure.ts: an attempt counted, the next one after
 * `nextAfterMs`; past the endpoint's last attempt the delivery is dead-lettered, kept
 * with its last error).
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
  if (!input.delivered) {
    return recordOutboxFailure(db, 'webhooks', {
      id: input.deliveryId,
      token: input.token,
      error: input.error ?? `HTTP ${input.status}`,
      nextAfterMs: input.nextAfterMs,
      maxAttempts: input.maxAttempts,
      also: { set: 'last_status = $6', params: [input.status] },
    });
  }
  const updated = await db.query(
    `update webhook_deliveries
        set attempts = attempts + 1, last_status = $3, last_error = null, state = 'delivered',
            delivered_at = now(), next_attempt_at = now(),
            lease_token = null, lease_expires_at = null
      where delivery_id = $1 and lease_token = $2`,
    [input.deliveryId, input.token, input.status],
  );
  return updated.rowCount > 0;
}
