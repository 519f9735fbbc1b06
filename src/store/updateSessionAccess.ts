import type { Visibility } from '../config/types.js';
import type { Queryable } from './db.js';
import { notifySql } from './wakeups.js';

/**
 * Changes who sees a session: its visibility, its room's members (null: unchanged). Not
 * activity: `updated_at` stays. The `access` wake-up makes every process re-check its
 * open event streams of the session, so a principal who lost sight of it stops receiving
 * its events. False when the session is gone.
 */
export async function updateSessionAccess(
  db: Queryable,
  tenant: string,
  sessionId: string,
  change: { visibility: Visibility | null; members: string[] | null },
): Promise<boolean> {
  const updated = await db.query<{ last_sequence: number }>(
    `with changed as (
       update sessions
          set visibility = coalesce($3, visibility), members = coalesce($4::text[], members)
        where tenant = $1 and session_id = $2
        returning session_id, last_sequence
     )
     select c.last_sequence,
            ${notifySql("'access'", 'c.session_id', 'c.last_sequence', 'null')} as notified
       from changed c`,
    [tenant, sessionId, change.visibility, change.members],
  );
  return updated.rowCount > 0;
}
