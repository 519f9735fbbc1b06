import type { Queryable } from './db.js';
import { LeaseLostError, type Lease, type NewEvent } from './types.js';
import { notifyWakeup } from './wakeups.js';

export interface AppendOptions {
  /** An applied turn write: resets the claim count that leads to parking. */
  progress?: boolean;
  /** The events include text of the current attempt (a new owner must reset it). */
  partialOutput?: boolean;
}

/**
 * Journals events for the lease holder, inside the caller's transaction. The counter bump
 * is the token gate: if the token is no longer on the row, nothing applies and this throws
 * LeaseLostError, so the caller's transaction rolls back whole. Returns the sequence of the
 * last event appended.
 */
export async function appendEvents(
  tx: Queryable,
  lease: Lease,
  events: NewEvent[],
  options: AppendOptions = {},
): Promise<number> {
  const bumped = await tx.query<{ last_sequence: number }>(
    `update sessions
        set last_sequence = last_sequence + $3,
            updated_at = now(),
            claim_count = case when $4 then 0 else claim_count end,
            partial_output = partial_output or $5
      where session_id = $1 and lease_token = $2
      returning last_sequence`,
    [
      lease.sessionId,
      lease.token,
      events.length,
      options.progress === true,
      options.partialOutput === true,
    ],
  );
  const last = bumped.rows[0]?.last_sequence;
  if (last === undefined) throw new LeaseLostError(lease.sessionId);
  await insertEvents(tx, lease.tenant, lease.sessionId, last - events.length, events);
  await notifyWakeup(tx, { kind: 'events', sessionId: lease.sessionId, sequence: last });
  return last;
}

/** Inserts events numbered after `base`; the caller has already reserved the sequences. */
export async function insertEvents(
  tx: Queryable,
  tenant: string,
  sessionId: string,
  base: number,
  events: NewEvent[],
): Promise<void> {
  if (events.length === 0) return;
  await tx.query(
    `insert into events (tenant, session_id, sequence, type, turn_id, payload)
     select $1, $2, $3 + e.ordinality, e.value->>'type', e.value->>'turn_id', e.value->'payload'
       from jsonb_array_elements($4::jsonb) with ordinality as e`,
    [tenant, sessionId, base, JSON.stringify(events)],
  );
}
