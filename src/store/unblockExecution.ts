import { ParleyError } from '../errors.js';
import type { Db } from './db.js';
import { journalEvents } from './appendEvents.js';
import { commandExecution, type ExecutionCommandAnswer } from './commandExecution.js';
import { executionStatusEvent, isEnded, type ExecutionRow } from './getExecution.js';
import { notifyWakeup } from './wakeups.js';

/**
 * POST /api/v1/executions/{id}/unblock: a person lets a `blocked` loop go on. Its next
 * iteration runs at once and carries the person's note (the evaluation reads it too).
 *
 * Applied under the execution's row lock (commandExecution), and it takes the lease away:
 * a step that a runner began on the blocked row (woken by its timeout, a stray wake-up or
 * a retry) holds the claim-time state, and its token-gated save would write `blocked`
 * back over the unblock that the client was told about. With its token gone, that save
 * applies nothing (the step stops as a lost lease, and no work of a blocked execution is
 * lost: the next claim redoes it from the row as the unblock left it). A cancel already
 * requested wins: the unblock is `too_late`.
 */
export async function unblockExecution(
  db: Db,
  input: { tenant: string; executionId: string; commandId: string; note: string | null },
): Promise<ExecutionCommandAnswer> {
  return commandExecution(db, { ...input, kind: 'unblock' }, async (tx, row) => {
    if (isEnded(row.status)) return { result: 'too_late', status: row.status };
    if (row.cancel_command_id !== null) return { result: 'too_late', status: 'cancelling' };
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
                next_run_at = now(), updated_at = now(),
                lease_token = null, lease_expires_at = null
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
