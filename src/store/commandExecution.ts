import type { ExecutionStatus } from '../protocol/events.js';
import { ParleyError } from '../errors.js';
import { isUniqueViolation, type Db, type Queryable } from './db.js';
import { journalEvents } from './appendEvents.js';
import { executionStatusEvent, isEnded, type ExecutionRow } from './getExecution.js';
import { notifyWakeup } from './wakeups.js';

export interface ExecutionCommandAnswer {
  result: 'cancelled' | 'unblocked' | 'duplicate' | 'too_late';
  /** The execution's status; `cancelling` while its running turn is being cancelled. */
  status: ExecutionStatus | 'cancelling';
}

/**
 * Runs one command on an execution under its row lock, idempotent by (tenant, command_id)
 * like a turn cancel: a retry answers `duplicate` with the first outcome; a command_id used
 * for another execution is `command_conflict`; an unknown (or another tenant's) execution
 * is `execution_not_found`.
 */
export async function commandExecution(
  db: Db,
  command: { tenant: string; executionId: string; commandId: string; kind: 'cancel' | 'unblock' },
  apply: (
    tx: Queryable,
    row: ExecutionRow & { leased: boolean },
  ) => Promise<ExecutionCommandAnswer>,
): Promise<ExecutionCommandAnswer> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await db.transaction(async (tx) => {
        const row = (
          await tx.query<ExecutionRow & { leased: boolean }>(
            `select *, lease_token is not null and lease_expires_at > now() as leased
               from executions where tenant = $1 and execution_id = $2 for update`,
            [command.tenant, command.executionId],
          )
        ).rows[0];
        if (!row) throw new ParleyError('execution_not_found', 'no such execution');
        const previous = (
          await tx.query<{ execution_id: string; kind: string; status: string }>(
            `select execution_id, kind, status from execution_commands
              where tenant = $1 and command_id = $2`,
            [command.tenant, command.commandId],
          )
        ).rows[0];
        if (previous) {
          if (previous.execution_id !== command.executionId || previous.kind !== command.kind) {
            throw new ParleyError(
              'command_conflict',
              'this command_id was already used for another command',
            );
          }
          return {
            result: 'duplicate',
            status: previous.status as ExecutionCommandAnswer['status'],
          };
        }
        const answer = await apply(tx, row);
        await tx.query(
          `insert into execution_commands (tenant, command_id, execution_id, kind, result, status)
           values ($1, $2, $3, $4, $5, $6)`,
          [
            command.tenant,
            command.commandId,
            command.executionId,
            command.kind,
            answer.result,
            answer.status,
          ],
        );
        return answer;
      });
    } catch (error) {
      if (!isUniqueViolation(error) || attempt >= 3) throw error;
    }
  }
}

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
    // then. Otherwise nothing runs for this execution, and it ends here.
    const atOnce =
      !row.leased &&
      row.spec.threads === null &&
      ['starting', 'waiting', 'blocked'].includes(row.status) &&
      row.loop_status !== 'evaluating';
    const updated = (
      await tx.query<ExecutionRow>(
        `update executions
            set cancel_command_id = coalesce(cancel_command_id, $3),
                status = case when $4 then 'cancelled' else status end,
                loop_status = case when $4 and loop_status is not null then 'idle' else loop_status end,
                ended_at = case when $4 then now() end,
                next_run_at = case when $4 then null else now() end,
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

/**
 * POST /api/v1/executions/{id}/unblock: a person lets a `blocked` loop go on. Its next
 * iteration runs at once and carries the person's note (the evaluation reads it too).
 */
export async function unblockExecution(
  db: Db,
  input: { tenant: string; executionId: string; commandId: string; note: string | null },
): Promise<ExecutionCommandAnswer> {
  return commandExecution(db, { ...input, kind: 'unblock' }, async (tx, row) => {
    if (isEnded(row.status)) return { result: 'too_late', status: row.status };
    if (row.status !== 'blocked') {
      throw new ParleyError(
        'execution_not_blocked',
        `the execution is ${row.status}, not blocked`,
        {
          status: row.status,
        },
      );
    }
    const updated = (
      await tx.query<ExecutionRow>(
        `update executions
            set status = 'waiting', loop_status = 'idle', resume_note = $3,
                next_run_at = now(), updated_at = now()
          where tenant = $1 and execution_id = $2
          returning *`,
        [input.tenant, input.executionId, input.note],
      )
    ).rows[0] as ExecutionRow;
    await journalEvents(tx, updated.session_id, [executionStatusEvent(updated)]);
    await notifyWakeup(tx, { kind: 'execution', sessionId: updated.session_id, sequence: 0 });
    return { result: 'unblocked', status: 'waiting' };
  });
}

/**
 * Asks the runner to cancel an execution (the scheduler's `overlap: cancel_previous`),
 * inside the caller's transaction; the runner then cancels it like any other.
 */
export async function requestCancel(
  tx: Queryable,
  execution: { tenant: string; executionId: string; commandId: string },
): Promise<void> {
  await tx.query(
    `update executions
        set cancel_command_id = coalesce(cancel_command_id, $3), next_run_at = now(),
            updated_at = now()
      where tenant = $1 and execution_id = $2 and ended_at is null`,
    [execution.tenant, execution.executionId, execution.commandId],
  );
}
