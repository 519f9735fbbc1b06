import type { Db } from './db.js';
import { journalEvents } from './appendEvents.js';
import { commandExecution, type ExecutionCommandAnswer } from './commandExecution.js';
import { executionStatusEvent, isEnded, type ExecutionRow } from './getExecution.js';
import { notifyWakeup } from './wakeups.js';

/**
 * POST /api/v1/executions/{id}/cancel. Durable: the request is on the row. An execution
 * with no turn in flight (starting, waiting for its delay, blocked, queued) is cancelled
 * here at once; one whose turn runs is made due, and the runner cancels the turn (through
 * cancelTurn) and ends it. A fan-out parent's threads are cancelled by the runner too.
 */
export async function cancelExecution(
  db: Db,
  input: { tenant: string; executionId: string; commandId: string },
): Promise<ExecutionCommandAnswer> {
  return commandExecution(db, { ...input, kind: 'cancel' }, async (tx, row) => {
    if (isEnded(row.status)) return { result: 'too_late', status: row.status };
    // A runner in the middle of a step owns the row until it saves: it sees the request
    // then. Otherwise nothing runs for this execution, and it ends here — unless a step
    // whose lease ran out had admitted the next iteration's turn (`exec.<id>.<n>`,
    // missions/iteration.ts) before saving it: that turn runs, so the runner's stop must
    // cancel it and count it, as for a turn in flight.
    const admittedNext = async () =>
      (
        await tx.query('select 1 from turns where tenant = $1 and turn_id = $2', [
          row.tenant,
          `exec.${row.execution_id}.${row.iteration + 1}`,
        ])
      ).rows.length > 0;
    const atOnce =
      !row.leased &&
      row.spec.threads === null &&
      ['starting', 'waiting', 'blocked'].includes(row.status) &&
      row.loop_status !== 'evaluating' &&
      !(await admittedNext());
    const updated = (
      await tx.query<ExecutionRow>(
        `update executions
            set cancel_command_id = coalesce(cancel_command_id, $3),
                status = case when $4 then 'cancelled' else status end,
                loop_status = case when $4 and loop_status is not null then 'idle' else loop_status end,
                ended_at = case when $4 then now() end,
                next_run_at = case when $4 then null else now() end,
                -- Ended here: a step whose lease expired must not save over the end.
                lease_token = case when $4 then null else lease_token end,
                lease_expires_at = case when $4 then null else lease_expires_at end,
                updated_at = now()
          where tenant = $1 and execution_id = $2
          returning *`,
        [input.tenant, input.executionId, input.commandId, atOnce],
      )
    ).rows[0] as ExecutionRow;
    if (atOnce) {
      await journalEvents(tx, updated.session_id, [executionStatusEvent(updated)]);
      await tx.query(
        `update executions set next_run_at = now(), updated_at = now()
          where tenant = $1 and ended_at is null
            and (execution_id = $2 or after_execution_id = $3)`,
        [input.tenant, updated.parent_execution_id, updated.execution_id],
      );
    }
    await notifyWakeup(tx, { kind: 'execution', sessionId: updated.session_id, sequence: 0 });
    return { result: 'cancelled', status: atOnce ? 'cancelled' : 'cancelling' };
  });
}
