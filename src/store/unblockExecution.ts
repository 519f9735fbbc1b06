import { ParleyError } from '../errors.js';
import type { Db } from './db.js';
import { journalEvents } from './appendEvents.js';
import { commandExecution, type ExecutionCommandAnswer } from './commandExecution.js';
import { executionStatusEvent, isEnded, type ExecutionRow } from './getExecution.js';
import { notifyWakeup } from './wakeups.js';

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
