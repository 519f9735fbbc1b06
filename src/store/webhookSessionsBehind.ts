import type { Db } from './db.js';

/**
 * Sessions with journal events an endpoint has not enqueued yet: among `sessionIds`
 * (those that just woke up), else among sessions written in the last `recentMs` (the
 * frequent sweep that covers a lost wake-up), else among all written since the endpoint
 * was configured (`recentMs` null).
 */
export async function webhookSessionsBehind(
  db: Db,
  input: {
    webhook: string;
    registeredAt: Date;
    sessionIds?: string[];
    recentMs: number | null;
    limit: number;
  },
): Promise<string[]> {
  const found = await db.query<{ session_id: string }>(
    `select s.session_id from sessions s
       left join webhook_streams w on w.webhook = $1 and w.session_id = s.session_id
      where s.updated_at >= $2 and s.last_sequence > coalesce(w.followed_sequence, 0)
        and ($5::text[] is null or s.session_id = any($5::text[]))
        and ($3::bigint is null or s.updated_at > now() - $3::bigint * interval '1 millisecond')
      limit $4`,
    [input.webhook, input.registeredAt, input.recentMs, input.limit, input.sessionIds ?? null],
  );
  return found.rows.map((row) => row.session_id);
}
