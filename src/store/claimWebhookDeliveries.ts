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
 * Takes due deliveries of the given endpoints: pending, their retry time come, not leased
 * by a live sender, and each the first pending one of its (endpoint, session), so a
 * session's events reach an endpoint in journal order. A dead-lettered delivery stops
 * blocking its session's later ones.
 */
export async function claimWebhookDeliveries(
  db: Db,
  input: { webhooks: string[]; token: string; leaseMs: number; limit: number },
): Promise<ClaimedDelivery[]> {
  const claimed = await db.query<ClaimedDelivery>(
    `with due as (
       select d.delivery_id from webhook_deliveries d
        where d.state = 'pending' and d.webhook = any($1::text[])
          and d.next_attempt_at <= now()
          and (d.lease_expires_at is null or d.lease_expires_at < now())
          and not exists (
                select 1 from webhook_deliveries e
                 where e.webhook = d.webhook and e.session_id = d.session_id
                   and e.state = 'pending' and e.sequence < d.sequence)
        order by d.next_attempt_at, d.sequence
        limit $4
        for update of d skip locked
     )
     update webhook_deliveries d
        set lease_token = $2, lease_expires_at = now() + $3 * interval '1 millisecond'
       from due where d.delivery_id = due.delivery_id
      returning d.delivery_id, d.webhook, d.session_id, d.sequence, d.payload, d.attempts`,
    [input.webhooks, input.token, input.leaseMs, input.limit],
  );
  return claimed.rows;
}
