import type { NewEvent } from '../protocol/events.js';
import type { Queryable, Statement } from './db.js';
import { liveEvents, storedEventsJson } from './eventRows.js';
import { LeaseLostError, type Lease } from './types.js';
import { notifySql } from './wakeups.js';

/**
 * The SQL that journals the events of a JSON parameter (`storedEventsJson`) right after a
 * session-row update `bumped` that returned `session_id, last_sequence` with the
 * counter already raised by their number. Every writing statement takes the session row
 * first this way (one lock order everywhere) and allocates its sequences from it, so
 * writers to one session serialise on that row and readers never see a hole.
 */
export function insertEventsSql(bumped: string, events: string): string {
  return `insert into events (session_id, sequence, type, turn_id, payload, message_offset)
    select b.session_id, b.last_sequence - jsonb_array_length(${events}::jsonb) + e.ordinality,
           e.value->>'type', e.value->>'turn_id', e.value->'payload',
           case e.value->>'transcript'
             when 'self' then 0
             when 'last' then jsonb_array_length(${events}::jsonb) - e.ordinality
           end
      from ${bumped} b, jsonb_array_elements(${events}::jsonb) with ordinality as e`;
}

export interface AppendOptions {
  /** An applied turn write: resets the claim count that leads to parking. */
  progress?: boolean;
  /** The events include text of the current attempt (a new owner must reset it). */
  partialOutput?: boolean;
}

const appendStatement: Statement = {
  name: 'append_events',
  text: `
    with bumped as (
      update sessions
         set last_sequence = last_sequence + jsonb_array_length($3::jsonb),
             updated_at = now(),
             claim_count = case when $4 then 0 else claim_count end,
             partial_output = partial_output or $5
       where session_id = $1 and lease_token = $2
       returning tenant, session_id, last_sequence
    ), inserted as (
      ${insertEventsSql('bumped', '$3')}
    )
    select last_sequence, ${notifySql("'events'", 'session_id', 'last_sequence', '$6::text')}
      from bumped`,
};

/**
 * Journals events for the lease holder in one statement (its own transaction, or the
 * caller's). The counter bump is the token gate: if the token is no longer on the row,
 * nothing applies and this throws LeaseLostError. Returns the sequence of the last event.
 */
export async function appendEvents(
  db: Queryable,
  lease: Lease,
  events: NewEvent[],
  options: AppendOptions = {},
): Promise<number> {
  const appended = await db.query<{ last_sequence: number }>(appendStatement, [
    lease.sessionId,
    lease.token,
    storedEventsJson(events),
    options.progress === true,
    options.partialOutput === true,
    liveEvents(events),
  ]);
  const last = appended.rows[0]?.last_sequence;
  if (last === undefined) throw new LeaseLostError(lease.sessionId);
  return last;
}

/**
 * Journals events for a writer without a lease (admission, cancel, answers) inside its
 * transaction, after it has locked the session row: raises the counter and inserts them.
 * Returns the sequence of the last event.
 */
export async function journalEvents(
  tx: Queryable,
  sessionId: string,
  events: NewEvent[],
  kind: 'events' | 'input' | 'cancel' = 'events',
): Promise<number> {
  const appended = await tx.query<{ last_sequence: number }>(
    {
      name: 'journal_events',
      text: `
        with bumped as (
          update sessions
             set last_sequence = last_sequence + jsonb_array_length($2::jsonb), updated_at = now()
           where session_id = $1
           returning tenant, session_id, last_sequence
        ), inserted as (
          ${insertEventsSql('bumped', '$2')}
        )
        select last_sequence, ${notifySql('$3::text', 'session_id', 'last_sequence', '$4::text')}
          from bumped`,
    },
    [sessionId, storedEventsJson(events), kind, liveEvents(events)],
  );
  const last = appended.rows[0]?.last_sequence;
  if (last === undefined) throw new Error(`no session ${sessionId} to journal to`);
  return last;
}
