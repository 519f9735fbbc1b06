import type { Db } from './db.js';
import { sweptSessions } from './tenantSweep.js';

/**
 * Sessions with journal events an endpoint has not enqueued yet, among the tenants it
 * belongs to (its registrations, `registerWebhooks`) and written since it first belonged
 * to theirs: among `sessionIds` (those that just woke up), else among sessions written in
 * the last `recentMs` (the frequent sweep that covers a lost wake-up), else among all
 * (`recentMs` null).
 */
export async function webhookSessionsBehind(
  db: Db,
  input: {
    webhook: string;
    sessionIds?: string[];
    recentMs: number | null;
    limit: number;
  },
): Promise<string[]> {
  const swept = sweptSessions(input, { ids: '$4::text[]', ms: '$2::bigint' });
  const found = await db.query<{ session_id: string }>(
    `${swept.with}
     select s.session_id from ${swept.from}
       left join webhook_streams w on w.webhook = $1 and w.session_id = s.session_id
      where s.last_sequence > coalesce(w.followed_sequence, 0)
        and exists (select 1 from webhook_endpoints e
                     where e.webhook = $1 and e.tenant in (s.tenant, '*')
                       and s.updated_at >= e.registered_at)
        and ${swept.where}
      limit $3`,
    [input.webhook, input.recentMs, input.limit, input.sessionIds ?? null],
  );
  return found.rows.map((row) => row.session_id);
}
