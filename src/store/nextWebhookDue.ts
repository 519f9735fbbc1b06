import type { Db } from './db.js';

/** Milliseconds until the next pending delivery is due, or null when none waits. */
export async function nextWebhookDue(db: Db, webhooks: string[]): Promise<number | null> {
  const found = await db.query<{ due_ms: number | null }>(
    `select floor(extract(epoch from min(next_attempt_at) - now()) * 1000)::bigint as due_ms
       from webhook_deliveries where state = 'pending' and webhook = any($1::text[])`,
    [webhooks],
  );
  const due = found.rows[0]?.due_ms ?? null;
  return due === null ? null : Math.max(0, due);
}
