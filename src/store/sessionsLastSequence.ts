import type { Queryable } from './db.js';

/**
 * The newest sequence of each of `sessionIds` that still exists (the journal feed's safety
 * poll: one query for every stream of the process; a session missing from the answer was
 * deleted).
 */
export async function sessionsLastSequence(
  db: Queryable,
  sessionIds: string[],
): Promise<{ session_id: string; last_sequence: number }[]> {
  const found = await db.query<{ session_id: string; last_sequence: number }>(
    {
      name: 'feed_poll',
      text: 'select session_id, last_sequence from sessions where session_id = any($1::text[])',
    },
    [sessionIds],
  );
  return found.rows;
}
