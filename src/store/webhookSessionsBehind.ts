import type { Db } from './db.js';
import { recentSessionsSql, tenantsSql } from './tenantSweep.js';

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
  const behind = `s.last_sequence > coalesce(w.followed_sequence, 0)
        and exists (select 1 from webhook_endpoints e
                     where e.webhook = $1 and e.tenant in (s.tenant, '*')
                       and s.updated_at >= e.registered_at)`;
  // The sweep of recent sessions walks them tenant by tenant (tenantSweep.ts).
  const found =
    input.sessionIds === undefined && input.recentMs !== null
      ? await db.query<{ session_id: string }>(
          `with recursive ${tenantsSql()}
           select s.session_id from ${recentSessionsSql('$2::bigint')} r
             join sessions s on s.session_id = r.session_id
             left join webhook_streams w on w.webhook = $1 and w.session_id = s.session_id
            where ${behind}
            limit $3`,
          [input.webhook, input.recentMs, input.limit],
        )
      : await db.query<{ session_id: string }>(
          `select s.session_id from sessions s
             left join webhook_streams w on w.webhook = $1 and w.session_id = s.session_id
            where ${behind}
              and ($4::text[] is null or s.session_id = any($4::text[]))
              and ($2::bigint is null or s.updated_at > now() - $2::bigint * interval '1 millisecond')
            limit $3`,
          [input.webhook, input.recentMs, input.limit, input.sessionIds ?? null],
        );
  return found.rows.map((row) => row.session_id);
}
