import { newEvent } from '../protocol/events.js';
import type { Db } from './db.js';
import { appendEvents } from './appendEvents.js';
import { expirePendingRequests } from './expireRequests.js';
import { LeaseLostError, type BurstState, type Lease } from './types.js';
import { notifyWakeup } from './wakeups.js';

/**
 * Parks a session that was claimed too often without an applied write (RUNTIME.md,
 * "Parking"): the turns it kept failing on end for good with one `error` event, claimers
 * skip it, and only an operator's unpark makes it claimable again. Those turns are the
 * attempted ones (`running`), or the first queued turn when no attempt started. With
 * `queued: 'hold'` the turns queued behind them stay queued and are answered after the
 * unpark; with `'fail'` they end with the same error. Runs under the claim's lease. The
 * session row is locked before the turns are read, so a turn admitted concurrently is
 * either decided here or admitted after (and waits for the unpark); a turn cancelled while
 * queued keeps its `cancelled` and gets no error. A request still pending is closed as
 * `error`. A session whose running burst has a cancel requested is not parked (null): the
 * cancel was acknowledged, and the drain ends the burst `cancelled` instead.
 */
export async function parkSession(
  db: Db,
  lease: Lease,
  reason: { claims: number; queued: 'hold' | 'fail' },
): Promise<{ sequence: number; turnIds: string[]; held: number } | null> {
  return db.transaction(async (tx) => {
    const locked = await tx.query<{ cancel_requested: boolean }>(
      `select cancel_command_id is not null as cancel_requested from sessions
        where session_id = $1 and lease_token = $2 for update`,
      [lease.sessionId, lease.token],
    );
    const session = locked.rows[0];
    if (!session) throw new LeaseLostError(lease.sessionId);
    // A cancel the client was told about wins: the burst ends cancelled, not parked.
    if (session.cancel_requested) return null;
    const pending = await tx.query<{ turn_id: string; position: number; state: string }>(
      `select t.turn_id, t.position, t.state from turns t join sessions s on s.session_id = t.session_id
        where s.session_id = $1 and t.position > s.input_cursor and t.state in ('queued', 'running')
        order by t.position`,
      [lease.sessionId],
    );
    const attempted = pending.rows.filter((row) => row.state === 'running');
    const failed =
      reason.queued === 'fail'
        ? pending.rows
        : attempted.length > 0
          ? attempted
          : pending.rows.slice(0, 1);
    const turnIds = failed.map((row) => row.turn_id);
    const held = pending.rows.length - failed.length;
    // Held turns stay past the cursor: the unpark finds them queued.
    const cursor = held > 0 ? (failed.at(-1)?.position ?? null) : null;
    const saved = await tx.query<{ burst: BurstState | null }>(
      'select burst from sessions where session_id = $1',
      [lease.sessionId],
    );
    // Its saved burst goes: a request still pending could never be resumed.
    const closed = await expirePendingRequests(tx, lease.sessionId, 'error');
    const sequence = await appendEvents(tx, lease, [
      ...closed,
      ...interruptedCalls(saved.rows[0]?.burst ?? null),
      newEvent('error', turnIds[0] ?? null, {
        code: 'session_parked',
        message:
          `the session was claimed ${reason.claims} times without progress and is parked; an operator can resume it with "parley sessions unpark"` +
          (held > 0
            ? ` (${held} queued message${held === 1 ? '' : 's'} will be answered then)`
            : ''),
        turn_ids: turnIds,
      }),
    ]);
    await tx.query(
      `update turns set state = 'error', completed_at = now()
        where tenant = $1 and turn_id = any($2::text[])`,
      [lease.tenant, turnIds],
    );
    await tx.query(
      `update sessions
          set state = 'parked', input_cursor = coalesce($2, input_count), attempt = 0,
              partial_output = false, current_turn_id = null, burst = null,
              lease_token = null, lease_owner = null, lease_expires_at = null
        where session_id = $1`,
      [lease.sessionId, cursor],
    );
    return { sequence, turnIds, held };
  });
}

/**
 * The `tool_result` of every call the parked burst had started and not reported: a call
 * saved `running` was under way when its worker stopped and may or may not have acted,
 * so the journal says `interrupted`, as a resumed burst would (runtime/toolLoop.ts).
 * Calls that never started get no result: they did nothing.
 */
function interruptedCalls(burst: BurstState | null) {
  if (!burst) return [];
  return burst.steps
    .flatMap((step) => step.calls)
    .filter((call) => call.status === 'running' && !call.reported)
    .map((call) =>
      newEvent('tool_result', burst.lead, {
        call_id: call.call_id,
        tool: call.tool,
        ok: false,
        error: {
          code: 'interrupted',
          message: 'the session was parked while this tool ran; it may or may not have run',
        },
      }),
    );
}

/** The operator's way back: claimable again, with a fresh claim count. */
export async function unparkSession(
  db: Db,
  tenant: string | null,
  sessionId: string,
): Promise<boolean> {
  return db.transaction(async (tx) => {
    const unparked = await tx.query<{ pending: boolean; last_sequence: number }>(
      `update sessions
          set state = case when input_count > input_cursor then 'queued' else 'idle' end,
              claim_count = 0
        where session_id = $1 and state = 'parked' and ($2::text is null or tenant = $2)
        returning input_count > input_cursor as pending, last_sequence`,
      [sessionId, tenant],
    );
    const row = unparked.rows[0];
    if (!row) return false;
    if (row.pending) {
      await notifyWakeup(tx, { kind: 'input', sessionId, sequence: row.last_sequence });
    }
    return true;
  });
}
