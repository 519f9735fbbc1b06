import type { ExecutionStatus } from '../protocol/events.js';
import { ParleyError } from '../errors.js';
import { isUniqueViolation, type Db, type Queryable } from './db.js';
import type { ExecutionRow } from './getExecution.js';

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
