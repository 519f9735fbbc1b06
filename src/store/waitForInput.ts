import type { Db } from './db.js';
import { appendEvents } from './appendEvents.js';
import { expirePendingRequests } from './expireRequests.js';
import { LeaseLostError, type Lease } from './types.js';
import { notifyWakeup } from './wakeups.js';

/**
 * Stops the turn until a person answers: releases the lease with the session in
 * `input_required` (not claimable). Decided under the session row lock, against what
 * happened since the requests were journaled:
 * - a cancel was requested → `queued` (the next owner cancels);
 * - with `supersede`, a newer message arrived → its requests expire here (`input_resolved`,
 *   `expired: superseded`) and the session is `queued`: the message is folded in;
 * - every request was already answered → `queued`: the turn resumes;
 * - else `input_required` until an answer, a superseding message or a cancel.
 */
export async function waitForInput(
  db: Db,
  lease: Lease,
  options: { supersede: boolean; lastPosition: number },
): Promise<void> {
  const queued = await db.transaction(async (tx) => {
    // Lock the row first, read after: what the reads see must include every answer,
    // message or cancel that committed before we got the lock.
    const locked = await tx.query(
      'select 1 from sessions where session_id = $1 and lease_token = $2 for update',
      [lease.sessionId, lease.token],
    );
    if (locked.rowCount === 0) throw new LeaseLostError(lease.sessionId);
    const session = (
      await tx.query<{ cancel: boolean; newer: boolean; pending: boolean }>(
        `select cancel_command_id is not null as cancel,
                exists (select 1 from turns t where t.session_id = s.session_id
                          and t.position > $2 and t.state = 'queued') as newer,
                exists (select 1 from input_requests r where r.session_id = s.session_id
                          and r.state = 'pending') as pending
           from sessions s
          where s.session_id = $1`,
        [lease.sessionId, options.lastPosition],
      )
    ).rows[0] as { cancel: boolean; newer: boolean; pending: boolean };
    if (options.supersede && session.newer && session.pending) {
      const expired = await expirePendingRequests(tx, lease.sessionId, 'superseded');
      if (expired.length > 0) await appendEvents(tx, lease, expired);
    }
    const wait = session.pending && !session.cancel && !(options.supersede && session.newer);
    await tx.query(
      `update sessions
          set state = $2, lease_token = null, lease_owner = null, lease_expires_at = null
        where session_id = $1`,
      [lease.sessionId, wait ? 'input_required' : 'queued'],
    );
    return !wait;
  });
  if (queued) {
    const sequence = (
      await db.query<{ last_sequence: number }>(
        'select last_sequence from sessions where session_id = $1',
        [lease.sessionId],
      )
    ).rows[0]?.last_sequence;
    await notifyWakeup(db, { kind: 'input', sessionId: lease.sessionId, sequence: sequence ?? 0 });
  }
}
