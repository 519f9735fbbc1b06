import type { Queryable } from './db.js';

/** A session's domain state as last committed (null: nothing has written it yet). */
export async function readSessionData(
  db: Queryable,
  tenant: string,
  sessionId: string,
): Promise<Record<string, unknown> | null> {
  const found = await db.query<{ data: Record<string, unknown> | null }>(
    'select data from sessions where tenant = $1 and session_id = $2',
    [tenant, sessionId],
  );
  return found.rows[0]?.data ?? null;
}
