import { newEvent } from '../protocol/events.js';
import { journalEvents } from './appendEvents.js';
import type { Db } from './db.js';

/**
 * An admin's edit of a session's domain state (docs/governance.md, "Sessions with
 * state"): the new `data` (validated by the caller) and its `state_changed` event (`by:
 * admin`) in one transaction. Only while no turn is in flight — none holds the lease, none
 * waits for a person halfway (a saved burst) — since its commit would write over the
 * edit; else `'busy'`. `'missing'` when there is no such session.
 */
export async function editSessionData(
  db: Db,
  tenant: string,
  sessionId: string,
  data: Record<string, unknown>,
): Promise<'edited' | 'busy' | 'missing'> {
  return db.transaction(async (tx) => {
    const found = await tx.query<{ free: boolean }>(
      `select lease_token is null and burst is null as free from sessions
        where tenant = $1 and session_id = $2 for update`,
      [tenant, sessionId],
    );
    const row = found.rows[0];
    if (!row) return 'missing';
    if (!row.free) return 'busy';
    await tx.query('update sessions set data = $2::jsonb where session_id = $1', [
      sessionId,
      JSON.stringify(data),
    ]);
    await journalEvents(tx, sessionId, [newEvent('state_changed', null, { data, by: 'admin' })]);
    return 'edited';
  });
}
