import type { Queryable } from './db.js';

/** The pending cancel of the session's running burst, if any (set by cancelTurn). */
export async function readCancelRequest(db: Queryable, sessionId: string): Promise<string | null> {
  const found = await db.query<{ cancel_command_id: string | null }>(
    'select cancel_command_id from sessions where session_id = $1',
    [sessionId],
  );
  return found.rows[0]?.cancel_command_id ?? null;
}
