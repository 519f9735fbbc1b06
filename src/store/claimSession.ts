import type { Queryable } from './db.js';
import type { SessionRow } from './types.js';

/**
 * Claims one session that has pending input and no live lease: writes a fresh token and
 * expiry in one short committed statement. SKIP LOCKED means concurrent claimers never
 * block each other; an expired lease is claimable, which makes this query the recovery
 * sweep for dead workers too. Uses the `sessions_claimable` partial index.
 */
export async function claimSession(
  db: Queryable,
  claim: { token: string; owner: string; ttlMs: number },
): Promise<SessionRow | null> {
  const claimed = await db.query<SessionRow>(
    `update sessions s
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
      returning s.*`,
    [claim.token, claim.owner, claim.ttlMs],
  );
  return claimed.rows[0] ?? null;
}
