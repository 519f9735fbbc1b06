import type { Queryable } from './db.js';
import type { Lease } from './types.js';

/**
 * Records when the turn resumed after its requests were resolved (`resumed_at`): the
 * first resume only (a new owner after a crash keeps the first time), and only under the
 * lease, so a worker that lost the session writes nothing.
 */
export async function markResumed(
  db: Queryable,
  lease: Lease,
  requestIds: string[],
): Promise<void> {
  if (requestIds.length === 0) return;
  await db.query(
    `update input_requests r set resumed_at = now()
       from sessions s
      where s.session_id = $1 and s.lease_token = $2 and r.session_id = s.session_id
        and r.request_id = any($3::text[]) and r.state <> 'pending' and r.resumed_at is null`,
    [lease.sessionId, lease.token, requestIds],
  );
}
