import type { Db } from './db.js';
import { recentSessionsSql, tenantsSql } from './tenantSweep.js';

/**
 * Bound sessions whose journal has events not yet folded into their outbox: among
 * `sessionIds` (those that just woke up), or, without them, among sessions written in
 * the last `recentMs` (the frequent sweep that covers a lost wake-up), or among all
 * (`recentMs` null: at start, and now and then).
 */
export async function threadsToFollow(
  db: Db,
  input: {
    adapters: string[];
    sessionIds?: string[];
    recentMs: number | null;
    limit: number;
  },
): Promise<string[]> {
  // The sweep of recent sessions walks them tenant by tenant (tenantSweep.ts); the others
  // start from the sessions named, or from the threads.
  const found =
    input.sessionIds === undefined && input.recentMs !== null
      ? await db.query<{ session_id: string }>(
          `with recursive ${tenantsSql()}
           select t.session_id from ${recentSessionsSql('$2::bigint')} r
             join sessions s on s.session_id = r.session_id
             join adapter_threads t on t.session_id = s.session_id
            where t.adapter = any($1::text[]) and s.last_sequence > t.followed_sequence
            limit $3`,
          [input.adapters, input.recentMs, input.limit],
        )
      : await db.query<{ session_id: string }>(
          `select t.session_id from adapter_threads t join sessions s on s.session_id = t.session_id
            where t.adapter = any($1::text[]) and s.last_sequence > t.followed_sequence
              and ($4::text[] is null or t.session_id = any($4::text[]))
              and ($2::bigint is null or s.updated_at > now() - $2::bigint * interval '1 millisecond')
            limit $3`,
          [input.adapters, input.recentMs, input.limit, input.sessionIds ?? null],
        );
  return found.rows.map((row) => row.session_id);
}
