import type { Queryable, Statement } from './db.js';
import { queuedTurnsSql, type QueuedTurn } from './collectTurns.js';
import type { SessionRow } from './types.js';

/** A claimed session, with the queued turns its first burst will answer. */
export type ClaimedSession = SessionRow & { queued: QueuedTurn[] };

const claimStatement: Statement = {
  name: 'claim_session',
  text: `
    with claimed as (
      update sessions s
         set lease_token = $1,
             lease_owner = $2,
             lease_expires_at = now() + $3::integer * interval '1 millisecond',
             claim_count = s.claim_count + 1,
             state = 'running'
        from (select session_id
                from sessions
               where input_count > input_cursor
                 and state not in ('parked', 'input_required')
                 and (lease_expires_at is null or lease_expires_at < now())
               order by lease_expires_at nulls first
               limit 1
               for update skip locked) candidate
       where s.session_id = candidate.session_id
       returning s.*
    )
    select c.*, (${queuedTurnsSql('c', '$4')}) as queued from claimed c`,
};

/**
 * Claims one session that has queued turns and no live lease: writes a fresh token and
 * expiry in one short statement, and reads the turns to answer in the same round trip.
 * SKIP LOCKED means concurrent claimers never block each other; an expired lease is
 * claimable, which makes this query the recovery sweep for dead workers too. Uses the
 * `sessions_claimable` partial index.
 */
export async function claimSession(
  db: Queryable,
  claim: { token: string; owner: string; ttlMs: number; maxTurns: number },
): Promise<ClaimedSession | null> {
  const claimed = await db.query<ClaimedSession>(claimStatement, [
    claim.token,
    claim.owner,
    claim.ttlMs,
    claim.maxTurns,
  ]);
  return claimed.rows[0] ?? null;
}
