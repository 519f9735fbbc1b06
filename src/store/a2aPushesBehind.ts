import type { Db } from './db.js';
import { recentSessionsSql, tenantsSql } from './tenantSweep.js';

/**
 * Push configs whose task has journal events not yet turned into notifications (or that
 * were never followed): among the sessions `sessionIds` (those that just woke up), else
 * among sessions written in the last `recentMs` (the sweep that covers a lost wake-up),
 * else among all (`recentMs` null). A config whose task ended and went out is done.
 */
export async function a2aPushesBehind(
  db: Db,
  input: { sessionIds?: string[]; recentMs: number | null; limit: number },
): Promise<string[]> {
  // The sweep of recent sessions walks them tenant by tenant (tenantSweep.ts), and takes
  // the configs never followed too.
  const found =
    input.sessionIds === undefined && input.recentMs !== null
      ? await db.query<{ push_id: string }>(
          `with recursive ${tenantsSql()}
           select p.push_id from a2a_push_configs p
             join sessions s on s.session_id = p.session_id
            where not p.finished and s.last_sequence > coalesce(p.followed_sequence, -1)
              and (p.followed_sequence is null
                   or p.session_id in ${recentSessionsSql('$1::bigint')})
            limit $2`,
          [input.recentMs, input.limit],
        )
      : await db.query<{ push_id: string }>(
          `select p.push_id from a2a_push_configs p
             join sessions s on s.session_id = p.session_id
            where not p.finished and s.last_sequence > coalesce(p.followed_sequence, -1)
              and ($3::text[] is null or p.session_id = any($3::text[]))
              and ($1::bigint is null or p.followed_sequence is null
                   or s.updated_at > now() - $1::bigint * interval '1 millisecond')
            limit $2`,
          [input.recentMs, input.limit, input.sessionIds ?? null],
        );
  return found.rows.map((row) => row.push_id);
}
