import type { Db } from './db.js';

/**
 * Milliseconds until the next outbox row is due (a retry's backoff, an edit's rate
 * limit), or null when none waits; the delivery loop sleeps that long at most.
 */
export async function nextReplyDue(db: Db, adapters: string[]): Promise<number | null> {
  const found = await db.query<{ due_ms: number | null }>(
    `select floor(extract(epoch from min(next_attempt_at) - now()) * 1000)::bigint as due_ms
       from adapter_replies
      where state = 'pending' and version > delivered_version and adapter = any($1::text[])`,
    [adapters],
  );
  const due = found.rows[0]?.due_ms ?? null;
  return due === null ? null : Math.max(0, due);
}
