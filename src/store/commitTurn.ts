import { newEvent, type NewEvent, type OptionsOffer } from '../protocol/events.js';
import type { BufferedEffect } from './types.js';
import { applyPanelEffects, panelEvents } from './applyPanelEffects.js';
import { applyMemoryEffects, type MemoryOwner } from './applyMemoryEffects.js';
import { applyStateChange, foldStateEffects } from './applyStateChange.js';
import type { Db, Queryable, Statement } from './db.js';
import { insertEventsSql } from './appendEvents.js';
import { liveEvents, storedEventsJson } from './eventRows.js';
import { holdsLease } from './startAttempt.js';
import { LeaseLostError, type BurstRef, type Lease } from './types.js';
import { insertUsageSql, sumUsage, usageEvents, usageJson, type Usage } from './usageRows.js';
import { publishWakeup, wakeupSql } from './wakeups.js';
import { settleReservationsSql } from './settleReservations.js';

/**
 * The burst's turns become `done`, found by the whole primary key (see startAttempt.ts: a
 * plan made on a nearly empty `turns` would scan the tenant's turns): a one-turn burst by
 * its turn, a folded burst's list in an unnamed statement, planned on each call.
 */
const closedOne = 't.tenant = $17 and t.turn_id = ($6::text[])[1]';
const closedMany = 't.tenant = $17 and t.turn_id = any($6::text[])';

const commitText = (closed: string) => `
    with bumped as (
      update sessions
         set last_sequence = last_sequence + jsonb_array_length($3::jsonb),
             updated_at = now(),
             claim_count = 0,
             input_cursor = greatest(input_cursor, $5),
             attempt = 0,
             partial_output = false,
             current_turn_id = null,
             burst = null,
             input_tokens = input_tokens + $13,
             output_tokens = output_tokens + $14,
             cost_usd = cost_usd + $15,
             -- Re-read under the row lock: a turn admitted until now keeps the lease for
             -- the next burst; otherwise the lease is released here.
             state = case when input_count > $5 then 'queued' else 'idle' end,
             lease_token = case when input_count > $5 then lease_token end,
             lease_owner = case when input_count > $5 then lease_owner end,
             lease_expires_at = case when input_count > $5 then lease_expires_at end
       where session_id = $1 and lease_token = $2 and cancel_command_id is null
       returning tenant, session_id, agent, last_sequence, input_count > $5 as pending
    ), inserted as (
      ${insertEventsSql('bumped', '$3')}
    ), message as (
      insert into messages (message_id, tenant, session_id, turn_id, role, author, content,
                            raw_content, sequence)
      select $7, b.tenant, b.session_id, ($6::text[])[1], 'assistant', $8, $9, $10, b.last_sequence
        from bumped b
    ), offer as (
      insert into option_offers (request_id, tenant, session_id, message_id, choices)
      select $11, b.tenant, b.session_id, $7, $12::jsonb from bumped b where $11::text is not null
    ), closed as (
      -- The burst's cost is its lead turn's.
      update turns t
         set state = 'done', answered_by = nullif(($6::text[])[1], t.turn_id), completed_at = now(),
             input_tokens = t.input_tokens + case when t.turn_id = ($6::text[])[1] then $13 else 0 end,
             output_tokens = t.output_tokens + case when t.turn_id = ($6::text[])[1] then $14 else 0 end,
             cost_usd = t.cost_usd + case when t.turn_id = ($6::text[])[1] then $15 else 0 end
        from bumped b
       where ${closed}
    ), billed as (
      ${insertUsageSql('bumped', '$16', '($6::text[])[1]', '$18::text')}
    ), settled as (
      ${settleReservationsSql('bumped')}
    )
    select b.last_sequence, b.pending,
           ${wakeupSql("'events'", 'b.session_id', 'b.last_sequence', '$4::text')} as wakeup
      from bumped b`;

export const commitTurnStatement: Statement = { name: 'commit_turn', text: commitText(closedOne) };
const commitMany = commitText(closedMany);

/**
 * Completes a burst in ONE token-gated statement (RUNTIME.md, "finish"): the last text of
 * the reply, the assistant message, the turn rows, the cursor, usage (events, the `usage`
 * rows, the totals, the budget reservations settled), the `done` event — and the lease, released unless another turn is
 * already queued. Either all of it is durable or, if the lease was lost or a cancel got
 * the session row first, none of it. Buffered effects (memory writes; the session's new
 * domain state, journaled as `state_changed` by the same statement) are applied in the
 * same transaction when there are any. Returns whether the worker still holds the lease
 * (more turns are queued), or `'cancelled'` when a cancel request got the session row
 * first (nothing written: the worker journals `cancelled` instead). A lost lease throws.
 */
export async function commitTurn(
  db: Db,
  lease: Lease,
  burst: BurstRef & {
    messageId: string;
    author: string;
    /** The visible closing message; `rawContent` is the model's reply when it differs. */
    content: string;
    rawContent: string | null;
    /** Options offered with the reply (request id made by the caller). */
    options: OptionsOffer | null;
    usage: Usage[];
    /** Whom the usage is billed to: the lead turn's author, which the worker read with the turn. */
    user: string;
    /** What the step streamed and is not journaled yet (the delta buffer's tail). */
    tail: NewEvent[];
    /** Events that come before the usage and `done` (the scope gate's verdict). */
    before?: NewEvent[];
    /** Buffered memory and state writes of the turn, applied with the commit. */
    effects?: { owner: MemoryOwner; list: readonly BufferedEffect[] };
    /** Who made the state effects: the turn's tools (default) or a pressed option. */
    stateBy?: 'tool' | 'option';
  },
): Promise<{ sequence: number; pending: boolean } | 'cancelled'> {
  const lead = burst.turnIds[0] as string;
  const events: NewEvent[] = [...burst.tail, ...(burst.before ?? [])];
  const stateChange = foldStateEffects(burst.effects?.list ?? []);
  if (stateChange) {
    events.push(
      newEvent('state_changed', lead, {
        data: stateChange.data,
        ...('result' in stateChange ? { result: stateChange.result ?? null } : {}),
        ...(stateChange.complete ? { completed: true } : {}),
        by: burst.stateBy ?? 'tool',
      }),
    );
  }
  events.push(...panelEvents(lead, burst.effects?.list ?? []));
  events.push(...usageEvents(lead, burst.usage));
  events.push(
    newEvent('done', lead, {
      final_message: {
        id: burst.messageId,
        role: 'assistant',
        content: burst.content,
        ...(burst.options ? { options: burst.options } : {}),
      },
      turn_ids: burst.turnIds,
    }),
  );
  const totals = sumUsage(burst.usage);
  const params = [
    lease.sessionId,
    lease.token,
    storedEventsJson(events, {
      id: burst.messageId,
      content: burst.content,
      rawContent: burst.rawContent,
    }),
    liveEvents(events),
    burst.lastPosition,
    burst.turnIds,
    burst.messageId,
    burst.author,
    burst.content,
    burst.rawContent,
    burst.options?.request_id ?? null,
    burst.options ? JSON.stringify(burst.options.choices) : null,
    totals.input_tokens,
    totals.output_tokens,
    totals.cost_usd,
    usageJson(burst.usage),
    lease.tenant,
    burst.user,
  ];
  const effects = burst.effects;
  const commit = (q: Queryable) =>
    q.query<{ last_sequence: number; pending: boolean; wakeup: string }>(
      burst.turnIds.length === 1 ? commitTurnStatement : commitMany,
      params,
    );
  let closed = false;
  const committed =
    effects && effects.list.length > 0
      ? await db.transaction(async (tx) => {
          const result = await commit(tx);
          // Nothing applied (lease lost, cancel first): no effect may be written either.
          if (result.rows[0]) {
            await applyMemoryEffects(
              tx,
              { ...effects.owner, sessionId: lease.sessionId },
              effects.list,
            );
            await applyPanelEffects(
              tx,
              { tenant: lease.tenant, user: effects.owner.user, sessionId: lease.sessionId },
              effects.list,
            );
            if (stateChange) {
              ({ closed } = await applyStateChange(tx, lease.sessionId, stateChange));
            }
          }
          return result;
        })
      : await commit(db);
  const row = committed.rows[0];
  if (row) {
    // After the transaction, when there was one: published only once committed.
    publishWakeup(db, row.wakeup);
    // A completed session keeps no lease: the turns still queued were answered `session_closed`.
    return { sequence: row.last_sequence, pending: row.pending && !closed };
  }
  // Nothing applied: a cancel took the session row first (no `done` then), or the lease is gone.
  if (await holdsLease(db, lease)) return 'cancelled';
  throw new LeaseLostError(lease.sessionId);
}
