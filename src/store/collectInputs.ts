import type { Queryable } from './db.js';

export interface PendingInput {
  turn_id: string;
  position: number;
  admitted_sequence: number;
  message_id: string;
  author: string;
  content: string;
  /** The option this turn chose, if it answered an options offer. */
  option: { request_id: string; value: string } | null;
}

/**
 * The pending inputs of a session (position past the cursor, not cancelled while queued),
 * oldest first: one burst.
 * Read by the lease holder, who is the only one to move the cursor.
 */
export async function collectInputs(
  db: Queryable,
  sessionId: string,
  limit: number,
): Promise<PendingInput[]> {
  const found = await db.query<PendingInput>(
    `select t.turn_id, t.position, t.admitted_sequence, t.message_id, m.author, m.content, t.option
       from sessions s
       join turns t on t.session_id = s.session_id and t.position > s.input_cursor
                   and t.state in ('queued', 'running')
       join messages m on m.message_id = t.message_id
      where s.session_id = $1
      order by t.position
      limit $2`,
    [sessionId, limit],
  );
  return found.rows;
}
