import type { Db } from './db.js';

/**
 * Records each configured webhook the first time a process sees it, and returns when
 * each was first seen: an endpoint receives the events journaled from then on, not
 * every session's history.
 */
export async function registerWebhooks(db: Db, names: string[]): Promise<Map<string, Date>> {
  const registered = await db.query<{ webhook: string; registered_at: Date }>(
    `with added as (
       insert into webhook_endpoints (webhook) select unnest($1::text[])
       on conflict (webhook) do nothing
       returning webhook, registered_at
     )
     select webhook, registered_at from added
     union all
     select webhook, registered_at from webhook_endpoints where webhook = any($1::text[])`,
    [names],
  );
  return new Map(registered.rows.map((row) => [row.webhook, row.registered_at]));
}
