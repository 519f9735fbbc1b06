import type { Queryable } from './db.js';
import type { BurstRef, Lease } from './types.js';

/**
 * Marks a burst's turns finished (error or cancelled) and moves the cursor past them,
 * inside the caller's transaction, which has already locked the session row.
 */
export async function closeBurst(
  tx: Queryable,
  lease: Lease,
  burst: BurstRef,
  state: 'error' | 'cancelled',
): Promise<void> {
  const lead = burst.turnIds[0] as string;
  await tx.query(
    `update turns
        set state = $3, answered_by = nullif($4, turn_id), completed_at = now()
      where tenant = $1 and turn_id = any($2::text[])`,
    [lease.tenant, burst.turnIds, state, lead],
  );
  await tx.query(
    `update sessions
        set input_cursor = greatest(input_cursor, $2),
            attempt = 0,
            partial_output = false,
            current_turn_id = null,
            burst = null,
            state = case
                      when exists (select 1 from turns t
                                    where t.session_id = $1 and t.position > $2 and t.state = 'queued')
                      then 'queued'
                      else 'idle'
                    end
      where session_id = $1`,
    [lease.sessionId, burst.lastPosition],
  );
}
