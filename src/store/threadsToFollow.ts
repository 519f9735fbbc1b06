import type { Db } from './db.js';
import { sweptSessions } from './tenantSweep.js';

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
  const swept = sweptSessions(input, { ids: '$4::text[]', ms: '$2::bigint' });
  const found = await db.query<{ session_id: string }>(
    `${swept.with}
     select t.session_id from ${swept.from}
       join adapter_threads t on t.session_id = s.session_id
      where t.adapter = any($1::text[]) and s.last_sequence > t.followed_sequence
        and ${swept.where}
      limit $3`,
    [input.adapters, input.recentMs, input.limit, input.sessionIds ?? null],
  );
  return found.rows.map((row) => row.session_id);
}
