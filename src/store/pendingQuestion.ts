import type { Queryable } from './db.js';

/**
 * The session's pending question (`ask_user`), if any: on a chat platform the next reply
 * in the thread answers it, as a person would expect.
 */
export async function pendingQuestion(
  db: Queryable,
  tenant: string,
  sessionId: string,
): Promise<{ request_id: string; expected_sequence: number } | null> {
  const found = await db.query<{ request_id: string; expected_sequence: number }>(
    `select request_id, expected_sequence from input_requests
      where tenant = $1 and session_id = $2 and state = 'pending' and kind = 'question'
      order by request_id limit 1`,
    [tenant, sessionId],
  );
  return found.rows[0] ?? null;
}
