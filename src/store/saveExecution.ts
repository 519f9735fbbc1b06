import type { ExecutionStatus, LoopDecision, LoopStatus } from '../protocol/events.js';
import type { Db } from './db.js';
import { journalEvents } from './appendEvents.js';
import { ExecutionLeaseLostError, type ExecutionLease } from './claimExecutions.js';
import { executionStatusEvent, isEnded, type ExecutionRow } from './getExecution.js';
import { notifyWakeup } from './wakeups.js';

/** Everything the runner decides about an execution in one step. */
export interface ExecutionState {
  status: ExecutionStatus;
  loop_status: LoopStatus | null;
  iteration: number;
  loop_decision: LoopDecision | null;
  result: unknown;
  evaluation_failures: number;
  resume_note: string | null;
  resolvers: Record<string, string>;
  input_tokens: number;
  output_tokens: number;
  /**
   * The timer, from now (the database's clock): the loop's delay, or when to look at its
   * turn again. Null: none (it waits for a person or a wake-up). The timeout always applies.
   */
  delayMs: number | null;
}

/**
 * Writes the runner's decision for one execution, gated on its lease token, in one
 * transaction: the state and its timer; `execution_status` in its session when `announce`;
 * and, once it has ended, the wake-up of its fan-out parent and of a successor queued
 * behind it (overlap: queue). An end saved after a cancel was acknowledged is `cancelled`.
 * `hold` keeps the lease (the step goes on, e.g. to evaluate);
 * otherwise it is released. Throws ExecutionLeaseLostError if the token is gone.
 */
export async function saveExecution(
  db: Db,
  lease: ExecutionLease,
  state: ExecutionState,
  options: { hold?: boolean; announce?: boolean } = {},
): Promise<ExecutionRow> {
  const ended = isEnded(state.status);
  return db.transaction(async (tx) => {
    const saved = await tx.query<ExecutionRow>(
      `update executions
          -- A cancel acknowledged before the end is saved wins, as a turn's does over
          -- its commit: the execution ends cancelled whatever the step concluded.
          set status = case when $14 and cancel_command_id is not null then 'cancelled' else $4 end,
              loop_status = case when $14 and cancel_command_id is not null and $5::text is not null
                                 then 'idle' else $5 end,
              iteration = $6, loop_decision = $7, result = $8,
              evaluation_failures = $9, resume_note = $10, resolvers = $11,
              input_tokens = $12, output_tokens = $13,
              -- A cancel requested during the step is honoured at once, not at the timer.
              next_run_at = case when $14 then null
                                 when cancel_command_id is not null then now()
                                 else least(now() + $15::bigint * interval '1 millisecond',
                                            timeout_at) end,
              ended_at = case when $14 then coalesce(ended_at, now()) end,
              updated_at = now(),
              -- lease_owner stays: the last worker that advanced it (diagnostics only).
              lease_token = case when $16 then lease_token end,
              lease_expires_at = case when $16 then lease_expires_at end
        where tenant = $1 and execution_id = $2 and lease_token = $3
        returning *`,
      [
        lease.tenant,
        lease.executionId,
        lease.token,
        state.status,
        state.loop_status,
        state.iteration,
        state.loop_decision === null ? null : JSON.stringify(state.loop_decision),
        state.result === null || state.result === undefined ? null : JSON.stringify(state.result),
        state.evaluation_failures,
        state.resume_note,
        JSON.stringify(state.resolvers),
        state.input_tokens,
        state.output_tokens,
        ended,
        state.delayMs === null ? null : Math.max(0, Math.round(state.delayMs)),
        options.hold === true && !ended,
      ],
    );
    const row = saved.rows[0];
    if (!row) throw new ExecutionLeaseLostError(lease.executionId);
    if (options.announce) {
      await journalEvents(tx, row.session_id, [executionStatusEvent(row)]);
    }
    if (ended) await wakeDependents(tx, row);
    return row;
  });
}

/** A fan-out parent gathers its threads; a queued successor may start. */
async function wakeDependents(
  tx: Parameters<Parameters<Db['transaction']>[0]>[0],
  row: ExecutionRow,
): Promise<void> {
  const woken = await tx.query<{ session_id: string }>(
    `update executions set next_run_at = now(), updated_at = now()
      where tenant = $1 and ended_at is null
        and (execution_id = $2 or after_execution_id = $3)
      returning session_id`,
    [row.tenant, row.parent_execution_id, row.execution_id],
  );
  for (const { session_id: sessionId } of woken.rows) {
    await notifyWakeup(tx, { kind: 'execution', sessionId, sequence: 0 });
  }
}
