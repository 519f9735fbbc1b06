import type { Queryable } from './db.js';

/**
 * The SQL that settles a session's budget reservations after a session-row update
 * `bumped` (token-gated) applied: the statement that bills the calls' usage deletes their
 * reservations, so what a budget used grows exactly as its reservation goes.
 */
export function settleReservationsSql(bumped: string, when = 'true'): string {
  return `delete from budget_reservations r using ${bumped} b
    where r.session_id = b.session_id and ${when}`;
}

/** The same, inside a transaction that has already taken the session row under the lease. */
export async function settleReservations(tx: Queryable, sessionId: string): Promise<void> {
  await tx.query('delete from budget_reservations where session_id = $1', [sessionId]);
}
