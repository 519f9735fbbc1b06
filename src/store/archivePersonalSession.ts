import { ParleyError } from '../errors.js';
import type { Db } from './db.js';

/** Ends the caller's personal session with an agent: the next call starts a fresh one. */
export async function archivePersonalSession(
  db: Db,
  input: { tenant: string; user: string; agent: string },
): Promise<string> {
  const archived = await db.query<{ session_id: string }>(
    `update personal_sessions set archived_at = now()
      where tenant = $1 and user_name = $2 and agent = $3 and archived_at is null
      returning session_id`,
    [input.tenant, input.user, input.agent],
  );
  const row = archived.rows[0];
  if (!row)
    throw new ParleyError(
      'personal_session_not_found',
      'no active personal session with this agent',
    );
  return row.session_id;
}
