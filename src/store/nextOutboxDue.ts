import type { Db } from './db.js';
import { outboxes, type Outbox } from './outboxes.js';

/**
 * Milliseconds until the next row of an outbox is due for one of `senders` (a retry's
 * backoff, an edit's rate limit), or null when none waits; its loop sleeps that long at
 * most.
 */
export async function nextOutboxDue(
  db: Db,
  outbox: Outbox,
  senders: string[],
): Promise<number | null> {
  const { table, sender, pending } = outboxes[outbox];
  const found = await db.query<{ due_ms: number | null }>(
    `select floor(extract(epoch from min(r.next_attempt_at) - now()) * 1000)::bigint as due_ms
       from ${table} r where ${pending} and r.${sender} = any($1::text[])`,
    [senders],
  );
  const due = found.rows[0]?.due_ms ?? null;
  return due === null ? null : Math.max(0, due);
}
