import { claimOutbox } from './claimOutbox.js';
import type { Db } from './db.js';

export interface ClaimedDelivery {
  delivery_id: string;
  webhook: string;
  session_id: string;
  sequence: number;
  payload: unknown;
  attempts: number;
}

/**
 * Takes due deliveries of the given endpoints (claimOutbox.ts): pending, their retry time
 * come, not leased by a live sender, and each the first pending one of its (endpoint,
 * session), so a session's events reach an endpoint in journal order. A dead-lettered
 * delivery stops blocking its session's later ones.
 */
export function claimWebhookDeliveries(
  db: Db,
  input: { webhooks: string[]; token: string; leaseMs: number; limit: number },
): Promise<ClaimedDelivery[]> {
  return claimOutbox<ClaimedDelivery>(
    db,
    'webhooks',
    { returning: 'r.delivery_id, r.webhook, r.session_id, r.sequence, r.payload, r.attempts' },
    { senders: input.webhooks, token: input.token, leaseMs: input.leaseMs, limit: input.limit },
  );
}
