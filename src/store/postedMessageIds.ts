import type { Db } from './db.js';

/** The platform message ids a session's outbox rows have recorded (the messages Parley knows it posted). */
export async function postedMessageIds(db: Db, sessionId: string): Promise<Set<string>> {
  const found = await db.query<{ platform_message_id: string }>(
    `select platform_message_id from adapter_replies
      where session_id = $1 and platform_message_id is not null`,
    [sessionId],
  );
  return new Set(found.rows.map((row) => row.platform_message_id));
}
