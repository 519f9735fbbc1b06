import type { Db, Queryable } from './db.js';
import { appendEvents } from './appendEvents.js';
import { expireRequests } from './burstState.js';
import { CancelRequestedError, LeaseLostError, type Lease, type NewEvent } from './types.js';

export interface Usage {
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  model: string;
  latency_ms: number;
}

export interface BurstRef {
  turnIds: string[];
  /** Position of the burst's last input: the cursor moves here. */
  lastPosition: number;
}

/**
 * Completes a burst in ONE token-gated transaction (RUNTIME.md, "finish"): the assistant
 * message, the turn rows, the cursor, usage, and the `usage` + `done` events. Either all
 * of it is durable or, if the lease was lost, none of it.
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
    options: { requestId: string; choices: string[] } | null;
    usage: Usage[];
  },
): Promise<number> {
  const lead = burst.turnIds[0] as string;
  return db.transaction(async (tx) => {
    // Take the row lock first: a cancel that got it before us wins (no `done` then).
    const session = await lockLeased(tx, lease);
    if (session.cancel_command_id !== null) throw new CancelRequestedError(lease.sessionId);
    const events = usageEvents(lead, burst.usage);
    events.push({
      type: 'done',
      turn_id: lead,
      payload: {
        final_message: {
          id: burst.messageId,
          role: 'assistant',
          content: burst.content,
          ...(burst.options
            ? { options: { request_id: burst.options.requestId, choices: burst.options.choices } }
            : {}),
        },
        turn_ids: burst.turnIds,
      },
    });
    const sequence = await appendEvents(tx, lease, events, { progress: true });
    await tx.query(
      `insert into messages (message_id, tenant, session_id, turn_id, role, author, content,
                             raw_content, sequence)
       values ($1, $2, $3, $4, 'assistant', $5, $6, $7, $8)
       on conflict (tenant, session_id, turn_id, role) do nothing`,
      [
        burst.messageId,
        lease.tenant,
        lease.sessionId,
        lead,
        burst.author,
        burst.content,
        burst.rawContent,
        sequence,
      ],
    );
    if (burst.options) {
      await tx.query(
        `insert into option_offers (request_id, tenant, session_id, message_id, choices)
         values ($1, $2, $3, $4, $5)`,
        [
          burst.options.requestId,
          lease.tenant,
          lease.sessionId,
          burst.messageId,
          JSON.stringify(burst.options.choices),
        ],
      );
    }
    const totals = burst.usage.reduce(
      (sum, usage) => ({
        input: sum.input + usage.input_tokens,
        output: sum.output + usage.output_tokens,
        cost: sum.cost + usage.cost_usd,
      }),
      { input: 0, output: 0, cost: 0 },
    );
    await closeBurst(tx, lease, burst, 'done');
    await tx.query(
      `update sessions
          set input_tokens = input_tokens + $2,
              output_tokens = output_tokens + $3,
              cost_usd = cost_usd + $4
        where session_id = $1`,
      [lease.sessionId, totals.input, totals.output, totals.cost],
    );
    return sequence;
  });
}

/**
 * Ends a burst for good with an `error` event (a permanent provider error, or retries
 * exhausted). Deliberately not "progress": repeated failures lead to parking.
 */
export async function failTurn(
  db: Db,
  lease: Lease,
  burst: BurstRef & { code: string; message: string; usage: Usage[] },
): Promise<number> {
  const lead = burst.turnIds[0] as string;
  return db.transaction(async (tx) => {
    const events = usageEvents(lead, burst.usage);
    events.push({
      type: 'error',
      turn_id: lead,
      payload: { code: burst.code, message: burst.message, turn_ids: burst.turnIds },
    });
    const sequence = await appendEvents(tx, lease, events);
    await closeBurst(tx, lease, burst, 'error');
    return sequence;
  });
}

/**
 * Journals `cancelled` for the running burst (PROTOCOL.md §5), naming every turn in it,
 * and clears the request. Turns admitted later stay queued for the next burst.
 */
export async function cancelBurst(db: Db, lease: Lease, usage: Usage[]): Promise<number | null> {
  return db.transaction(async (tx) => {
    const session = await lockLeased(tx, lease);
    const running = await tx.query<{ turn_id: string; position: number }>(
      `select turn_id, position from turns
        where session_id = $1 and state = 'running' order by position`,
      [lease.sessionId],
    );
    const turnIds = running.rows.map((row) => row.turn_id);
    let sequence: number | null = null;
    if (turnIds.length > 0) {
      const lead = turnIds[0] as string;
      const pending = await tx.query<{ request_id: string }>(
        `select request_id from input_requests where session_id = $1 and state = 'pending'`,
        [lease.sessionId],
      );
      const events = [
        ...(await expireRequests(
          tx,
          lease,
          pending.rows.map((row) => row.request_id),
          'cancelled',
        )),
        ...usageEvents(lead, usage),
      ];
      const command = await tx.query<{ actor: unknown }>(
        'select actor from commands where tenant = $1 and command_id = $2',
        [lease.tenant, session.cancel_command_id],
      );
      events.push({
        type: 'cancelled',
        turn_id: lead,
        payload: {
          command_id: session.cancel_command_id,
          turn_ids: turnIds,
          actor: command.rows[0]?.actor ?? null,
        },
      });
      sequence = await appendEvents(tx, lease, events);
      const lastPosition = (running.rows[running.rows.length - 1] as { position: number }).position;
      await closeBurst(tx, lease, { turnIds, lastPosition }, 'cancelled');
    }
    await tx.query('update sessions set cancel_command_id = null where session_id = $1', [
      lease.sessionId,
    ]);
    return sequence;
  });
}

async function lockLeased(
  tx: Queryable,
  lease: Lease,
): Promise<{ cancel_command_id: string | null }> {
  const found = await tx.query<{ cancel_command_id: string | null }>(
    'select cancel_command_id from sessions where session_id = $1 and lease_token = $2 for update',
    [lease.sessionId, lease.token],
  );
  const row = found.rows[0];
  if (!row) throw new LeaseLostError(lease.sessionId);
  return row;
}

/** One `usage` event per provider call of the burst. */
function usageEvents(lead: string, usage: Usage[]): NewEvent[] {
  return usage.map((call) => ({ type: 'usage', turn_id: lead, payload: { ...call } }));
}

/** Marks the burst's turns finished and moves the cursor past them. */
async function closeBurst(
  tx: Queryable,
  lease: Lease,
  burst: BurstRef,
  state: 'done' | 'error' | 'cancelled',
): Promise<void> {
  const lead = burst.turnIds[0] as string;
  await tx.query(
    `update turns
        set state = $3, answered_by = $4, completed_at = now()
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
