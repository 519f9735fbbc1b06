import { newEvent, type InputKind, type NewEvent } from '../protocol/events.js';
import type { Queryable, Statement } from './db.js';
import { insertEventsSql } from './appendEvents.js';
import { liveEvents, storedEventsJson } from './eventRows.js';
import { LeaseLostError, type BurstState, type Lease, type Nudge } from './types.js';
import { insertUsageSql, sumUsage, usageJson, type Usage } from './usageRows.js';
import { notifySql } from './wakeups.js';
import { settleReservationsSql } from './settleReservations.js';

export interface NewInputRequest {
  request_id: string;
  call_id: string;
  kind: InputKind;
  tool: string | null;
  arguments: unknown;
  prompt: string | null;
  /** When its safe default applies if nobody answers (ISO time); null: it waits for ever. */
  deadline_at: string | null;
  on_timeout: 'reject' | 'approve';
  /** sha-256 of the canonical JSON of the arguments an approval shows; null otherwise. */
  arguments_digest: string | null;
  /** Only a person may answer it, and the answer must name `arguments_digest`. */
  human_only: boolean;
  /** Its escalations and reminder before the deadline, in time order. */
  nudges: Nudge[];
  /** external_auth: the third party, where access is granted, the access asked for. */
  authorization?: { provider: string; url: string; scope: string | null };
  /** external_auth: the user whose credential the answer names. */
  user_name?: string;
}

const saveStatement: Statement = {
  name: 'save_burst',
  text: `
    with bumped as (
      update sessions
         set last_sequence = last_sequence + jsonb_array_length($3::jsonb),
             updated_at = case when jsonb_array_length($3::jsonb) > 0 then now() else updated_at end,
             burst = $5::jsonb,
             partial_output = partial_output or $9,
             -- From its input_required event on, the turn waits for a person (projections
             -- say so at once); waitForInput then gives the session back.
             state = case when jsonb_array_length($10::jsonb) > 0 then 'input_required' else state end,
             input_tokens = input_tokens + $6,
             output_tokens = output_tokens + $7,
             cost_usd = cost_usd + $8
       where session_id = $1 and lease_token = $2
       returning tenant, session_id, agent, last_sequence
    ), inserted as (
      ${insertEventsSql('bumped', '$3')}
    ), billed as (
      ${insertUsageSql('bumped', '$11', '$12::text')}
    ), settled as (
      ${settleReservationsSql('bumped', 'jsonb_array_length($11::jsonb) > 0')}
    ), requests as (
      insert into input_requests (request_id, tenant, session_id, turn_id, call_id, kind, tool,
                                  arguments, expected_sequence, deadline_at, on_timeout,
                                  arguments_digest, human_only, nudges, next_nudge_at,
                                  provider, url, user_name)
      select r.value->>'request_id', b.tenant, b.session_id, r.value->>'turn_id',
             r.value->>'call_id', r.value->>'kind', r.value->>'tool', r.value->'arguments',
             b.last_sequence - jsonb_array_length($3::jsonb) + (r.value->>'position')::integer,
             (r.value->>'deadline_at')::timestamptz, r.value->>'on_timeout',
             r.value->>'arguments_digest', (r.value->>'human_only')::boolean,
             r.value->'nudges', (r.value->'nudges'->0->>'at')::timestamptz,
             r.value->>'provider', r.value->>'url', r.value->>'user_name'
        from bumped b, jsonb_array_elements($10::jsonb) as r
    )
    select b.last_sequence,
           case when jsonb_array_length($3::jsonb) > 0
                then ${notifySql("'events'", 'b.session_id', 'b.last_sequence', '$4::text')} end
             as notified
      from bumped b`,
};

/**
 * Journals `events` and saves the working conversation of the burst on the session row
 * (so that whoever owns the session next rebuilds the exact prompt), in one token-gated
 * statement. Each request in `requests` gets an `input_required` event appended after
 * `events`; its sequence is the `expected_sequence` an answer must carry. A request with a
 * deadline is announced by its event's wake-up (the approval timer listens for it).
 */
export async function saveBurst(
  db: Queryable,
  lease: Lease,
  burst: BurstState,
  changes: {
    events?: NewEvent[];
    requests?: NewInputRequest[];
    /** Model calls made for this step: billed (rows, session totals, reservations settled) with it. */
    usage?: Usage[];
    /** The events carry text of the current attempt. */
    partialOutput?: boolean;
  } = {},
): Promise<void> {
  const requests = changes.requests ?? [];
  const events: NewEvent[] = [...(changes.events ?? [])];
  const rows = requests.map((request) => {
    events.push(
      newEvent('input_required', burst.lead, {
        request_id: request.request_id,
        kind: request.kind,
        call_id: request.call_id,
        ...(request.tool === null ? {} : { tool: request.tool, arguments: request.arguments }),
        ...(request.prompt === null ? {} : { prompt: request.prompt }),
        ...(request.arguments_digest === null
          ? {}
          : { arguments_digest: request.arguments_digest }),
        ...(request.deadline_at === null ? {} : { deadline_at: request.deadline_at }),
        ...(request.authorization
          ? {
              provider: request.authorization.provider,
              url: request.authorization.url,
              ...(request.authorization.scope === null
                ? {}
                : { scope: request.authorization.scope }),
            }
          : {}),
      }),
    );
    return {
      request_id: request.request_id,
      turn_id: burst.lead,
      call_id: request.call_id,
      kind: request.kind,
      tool: request.tool,
      arguments: request.arguments ?? null,
      position: events.length,
      deadline_at: request.deadline_at,
      on_timeout: request.on_timeout,
      arguments_digest: request.arguments_digest,
      human_only: request.human_only,
      nudges: request.nudges,
      provider: request.authorization?.provider ?? null,
      url: request.authorization?.url ?? null,
      user_name: request.user_name ?? null,
    };
  });
  const usage = sumUsage(changes.usage ?? []);
  const saved = await db.query(saveStatement, [
    lease.sessionId,
    lease.token,
    storedEventsJson(events),
    liveEvents(events),
    JSON.stringify(burst),
    usage.input_tokens,
    usage.output_tokens,
    usage.cost_usd,
    changes.partialOutput === true,
    JSON.stringify(rows),
    usageJson(changes.usage ?? []),
    burst.lead,
  ]);
  if (saved.rowCount === 0) throw new LeaseLostError(lease.sessionId);
}
