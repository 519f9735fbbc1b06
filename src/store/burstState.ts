import type { Db, Queryable } from './db.js';
import { appendEvents } from './appendEvents.js';
import { LeaseLostError, type BurstState, type Lease, type NewEvent } from './types.js';
import { notifyWakeup } from './wakeups.js';

/** The saved working conversation of the session's burst, if one is in progress. */
export async function readBurst(db: Queryable, sessionId: string): Promise<BurstState | null> {
  const found = await db.query<{ burst: BurstState | null }>(
    'select burst from sessions where session_id = $1',
    [sessionId],
  );
  return found.rows[0]?.burst ?? null;
}

export interface NewInputRequest {
  request_id: string;
  call_id: string;
  kind: 'approval' | 'question' | 'budget_extension';
  tool: string | null;
  arguments: unknown;
  prompt: string | null;
}

/**
 * Journals `events` and saves the burst in one token-gated transaction. Each request in
 * `requests` gets an `input_required` event appended after `events`; its sequence is the
 * `expected_sequence` an answer must carry.
 */
export async function saveBurst(
  db: Db,
  lease: Lease,
  burst: BurstState,
  changes: {
    events?: NewEvent[];
    requests?: NewInputRequest[];
    /** Pending requests to expire first (their `input_resolved` events lead). */
    expire?: { requestIds: string[]; reason: 'superseded' | 'cancelled' };
    /** Usage of model calls made for this step, added to the session's totals. */
    usage?: { input_tokens: number; output_tokens: number; cost_usd: number };
  } = {},
): Promise<void> {
  const requests = changes.requests ?? [];
  await db.transaction(async (tx) => {
    const expired = changes.expire
      ? await expireRequests(tx, lease, changes.expire.requestIds, changes.expire.reason)
      : [];
    const events = [...expired, ...(changes.events ?? [])];
    const all: NewEvent[] = [
      ...events,
      ...requests.map((request) => ({
        type: 'input_required',
        turn_id: burst.lead,
        payload: {
          request_id: request.request_id,
          kind: request.kind,
          call_id: request.call_id,
          ...(request.tool === null ? {} : { tool: request.tool, arguments: request.arguments }),
          ...(request.prompt === null ? {} : { prompt: request.prompt }),
        },
      })),
    ];
    if (all.length > 0) {
      const last = await appendEvents(tx, lease, all);
      const first = last - all.length + 1;
      for (const [index, request] of requests.entries()) {
        await tx.query(
          `insert into input_requests (request_id, tenant, session_id, turn_id, call_id, kind, tool,
                                       arguments, expected_sequence)
           values ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
          [
            request.request_id,
            lease.tenant,
            lease.sessionId,
            burst.lead,
            request.call_id,
            request.kind,
            request.tool,
            JSON.stringify(request.arguments ?? null),
            first + events.length + index,
          ],
        );
      }
    }
    const usage = changes.usage ?? { input_tokens: 0, output_tokens: 0, cost_usd: 0 };
    const saved = await tx.query(
      `update sessions
          set burst = $3, input_tokens = input_tokens + $4, output_tokens = output_tokens + $5,
              cost_usd = cost_usd + $6
        where session_id = $1 and lease_token = $2`,
      [
        lease.sessionId,
        lease.token,
        JSON.stringify(burst),
        usage.input_tokens,
        usage.output_tokens,
        usage.cost_usd,
      ],
    );
    if (saved.rowCount === 0) throw new LeaseLostError(lease.sessionId);
  });
}

/**
 * Stops the turn until a person answers: releases the lease with the session in
 * `input_required` (not claimable). If, meanwhile, a cancel was requested or (with
 * `supersede`) a newer message arrived, the session goes back to `queued` instead.
 */
export async function waitForInput(
  db: Db,
  lease: Lease,
  options: { supersede: boolean; lastPosition: number },
): Promise<void> {
  const released = await db.query<{ state: string; last_sequence: number }>(
    `update sessions
        set state = case
                      when cancel_command_id is not null then 'queued'
                      when $3 and exists (select 1 from turns t
                                           where t.session_id = $1 and t.position > $4
                                             and t.state = 'queued') then 'queued'
                      else 'input_required'
                    end,
            lease_token = null, lease_owner = null, lease_expires_at = null
      where session_id = $1 and lease_token = $2
      returning state, last_sequence`,
    [lease.sessionId, lease.token, options.supersede, options.lastPosition],
  );
  const row = released.rows[0];
  if (!row) throw new LeaseLostError(lease.sessionId);
  if (row.state === 'queued') {
    await notifyWakeup(db, {
      kind: 'input',
      sessionId: lease.sessionId,
      sequence: row.last_sequence,
    });
  }
}

export interface RequestAnswer {
  request_id: string;
  state: 'pending' | 'answered' | 'expired';
  approved: boolean | null;
  response: Record<string, unknown> | null;
  actor: { user: string; tenant: string } | null;
}

export async function readRequests(
  db: Queryable,
  requestIds: string[],
): Promise<Map<string, RequestAnswer>> {
  const found = await db.query<RequestAnswer>(
    `select request_id, state, approved, response, actor from input_requests
      where request_id = any($1::text[])`,
    [requestIds],
  );
  return new Map(found.rows.map((row) => [row.request_id, row]));
}

/** Expires pending requests (superseded by a new message, or the turn was cancelled). */
export async function expireRequests(
  tx: Queryable,
  lease: Lease,
  requestIds: string[],
  reason: 'superseded' | 'cancelled',
): Promise<NewEvent[]> {
  const expired = await tx.query<{ request_id: string; turn_id: string }>(
    `update input_requests set state = 'expired', answered_at = now(), response = $3
      where session_id = $1 and request_id = any($2::text[]) and state = 'pending'
      returning request_id, turn_id`,
    [lease.sessionId, requestIds, JSON.stringify({ expired: reason })],
  );
  return expired.rows.map((row) => ({
    type: 'input_resolved',
    turn_id: row.turn_id,
    payload: { request_id: row.request_id, approved: false, expired: reason, actor: null },
  }));
}
