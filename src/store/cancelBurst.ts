import { newEvent, type Actor } from '../protocol/events.js';
import type { Db } from './db.js';
import { appendEvents } from './appendEvents.js';
import { billUsage } from './billUsage.js';
import { closeBurst } from './closeBurst.js';
import { settleReservations } from './settleReservations.js';
import { expirePendingRequests } from './expireRequests.js';
import { LeaseLostError, type Lease } from './types.js';
import { usageEvents, type Usage } from './usageRows.js';

/**
 * Journals `cancelled` for the running burst (PROTOCOL.md §5), naming every turn in it,
 * and clears the request. Turns admitted later stay queued for the next burst. Pending
 * requests of the burst expire (`input_resolved` with `expired: cancelled`).
 */
export async function cancelBurst(db: Db, lease: Lease, usage: Usage[]): Promise<number | null> {
  return db.transaction(async (tx) => {
    // The session row first (one lock order everywhere), gated on the lease; read after.
    const locked = await tx.query(
      'select 1 from sessions where session_id = $1 and lease_token = $2 for update',
      [lease.sessionId, lease.token],
    );
    if (locked.rowCount === 0) throw new LeaseLostError(lease.sessionId);
    const session = (
      await tx.query<{ cancel_command_id: string | null; actor: Actor | null }>(
        `select s.cancel_command_id, c.actor
           from sessions s
           left join commands c on c.tenant = s.tenant and c.command_id = s.cancel_command_id
          where s.session_id = $1`,
        [lease.sessionId],
      )
    ).rows[0] as { cancel_command_id: string | null; actor: Actor | null };
    const running = await tx.query<{ turn_id: string; position: number }>(
      `select turn_id, position from turns
        where session_id = $1 and state = 'running' order by position`,
      [lease.sessionId],
    );
    const turnIds = running.rows.map((row) => row.turn_id);
    let sequence: number | null = null;
    if (turnIds.length > 0) {
      const lead = turnIds[0] as string;
      const expired = await expirePendingRequests(tx, lease.sessionId, 'cancelled');
      sequence = await appendEvents(tx, lease, [
        ...expired,
        ...usageEvents(lead, usage),
        newEvent('cancelled', lead, {
          command_id: session.cancel_command_id,
          turn_ids: turnIds,
          actor: session.actor,
        }),
      ]);
      const lastPosition = (running.rows[running.rows.length - 1] as { position: number }).position;
      await closeBurst(tx, lease, { turnIds, lastPosition }, 'cancelled');
      await billUsage(tx, lease, lead, usage);
      await settleReservations(tx, lease.sessionId);
    }
    await tx.query('update sessions set cancel_command_id = null where session_id = $1', [
      lease.sessionId,
    ]);
    return sequence;
  });
}
