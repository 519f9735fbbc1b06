import type { Db } from './db.js';

export interface WebhookCounts {
  webhook: string;
  pending: number;
  delivered: number;
  dead: number;
  oldest_pending_at: Date | null;
  last_attempt_error: string | null;
}

export interface DeadLetter {
  delivery_id: string;
  webhook: string;
  session_id: string;
  sequence: number;
  event_type: string;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  created_at: Date;
}

/** Deliveries of a tenant by endpoint and state, and its latest dead letters. */
export async function webhookStatus(
  db: Db,
  tenant: string,
  webhooks: string[],
  deadLimit: number,
): Promise<{ counts: WebhookCounts[]; dead: DeadLetter[] }> {
  const counts = await db.query<WebhookCounts>(
    `select w.webhook,
            count(*) filter (where d.state = 'pending')::bigint as pending,
            count(*) filter (where d.state = 'delivered')::bigint as delivered,
            count(*) filter (where d.state = 'dead')::bigint as dead,
            min(d.created_at) filter (where d.state = 'pending') as oldest_pending_at,
            (array_agg(d.last_error order by d.next_attempt_at desc)
               filter (where d.state = 'pending' and d.last_error is not null))[1]
              as last_attempt_error
       from unnest($2::text[]) as w(webhook)
       left join webhook_deliveries d on d.webhook = w.webhook and d.tenant = $1
      group by w.webhook
      order by w.webhook`,
    [tenant, webhooks],
  );
  const dead = await db.query<DeadLetter>(
    `select delivery_id, webhook, session_id, sequence, event_type, attempts, last_status,
            last_error, created_at
       from webhook_deliveries
      where tenant = $1 and webhook = any($2::text[]) and state = 'dead'
      order by created_at desc, delivery_id desc
      limit $3`,
    [tenant, webhooks, deadLimit],
  );
  return { counts: counts.rows, dead: dead.rows };
}
