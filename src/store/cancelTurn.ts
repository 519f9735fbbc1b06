import { ParleyError } from '../errors.js';
import { isUniqueViolation, type Db, type Queryable } from './db.js';
import { newEvent, type Actor } from '../protocol/events.js';
import { journalEvents } from './appendEvents.js';
import type { TurnState } from './types.js';
import { notifyWakeup } from './wakeups.js';

export interface CancelInput {
  tenant: string;
  sessionId: string;
  turnId: string;
  commandId: string;
  /** The authenticated principal: recorded with the command and in `cancelled`. */
  actor: Actor;
}

export interface CancelAnswer {
  result: 'cancelled' | 'duplicate' | 'too_late';
  /** The turn's state; `cancelling` while its worker has yet to stop (cooperative). */
  state: TurnState | 'cancelling';
  sequence: number;
}

/**
 * PROTOCOL.md §5. Idempotent by (tenant, command_id). Serialised with the worker on the
 * session row: whichever locks it first wins, so a turn ends in exactly one of `done` or
 * `cancelled`.
 * - queued turn: cancelled at once (`cancelled` event naming just it);
 * - running burst: a request on the session row; the lease holder aborts its provider
 *   stream, lets a running tool finish, and journals `cancelled` naming the whole burst;
 * - finished turn: `too_late`.
 */
export async function cancelTurn(db: Db, input: CancelInput): Promise<CancelAnswer> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await db.transaction((tx) => cancelOnce(tx, input));
    } catch (error) {
      if (!isUniqueViolation(error) || attempt >= 3) throw error;
    }
  }
}

async function cancelOnce(tx: Queryable, input: CancelInput): Promise<CancelAnswer> {
  const session = (
    await tx.query<{ last_sequence: number; cancel_command_id: string | null }>(
      `select last_sequence, cancel_command_id from sessions
        where tenant = $1 and session_id = $2 for update`,
      [input.tenant, input.sessionId],
    )
  ).rows[0];
  if (!session) throw new ParleyError('session_not_found', 'no such session');

  const previous = (
    await tx.query<{ session_id: string; turn_id: string; state: string }>(
      'select session_id, turn_id, state from commands where tenant = $1 and command_id = $2',
      [input.tenant, input.commandId],
    )
  ).rows[0];
  if (previous) {
    if (previous.session_id !== input.sessionId || previous.turn_id !== input.turnId) {
      throw new ParleyError(
        'command_conflict',
        'this command_id was already used for another turn',
      );
    }
    return {
      result: 'duplicate',
      state: previous.state as CancelAnswer['state'],
      sequence: session.last_sequence,
    };
  }

  const turn = (
    await tx.query<{ state: TurnState }>(
      'select state from turns where tenant = $1 and turn_id = $2 and session_id = $3',
      [input.tenant, input.turnId, input.sessionId],
    )
  ).rows[0];
  if (!turn) throw new ParleyError('turn_not_found', 'no such turn in this session');

  let answer: CancelAnswer;
  if (turn.state === 'queued') {
    await tx.query(
      `update turns set state = 'cancelled', completed_at = now() where tenant = $1 and turn_id = $2`,
      [input.tenant, input.turnId],
    );
    const sequence = await journalEvents(tx, input.sessionId, [
      newEvent('cancelled', input.turnId, {
        command_id: input.commandId,
        turn_ids: [input.turnId],
        actor: input.actor,
      }),
    ]);
    answer = { result: 'cancelled', state: 'cancelled', sequence };
  } else if (turn.state === 'running') {
    if (session.cancel_command_id === null) {
      await tx.query(
        `update sessions
            set cancel_command_id = $2,
                state = case when state = 'input_required' then 'queued' else state end
          where session_id = $1`,
        [input.sessionId, input.commandId],
      );
      await notifyWakeup(tx, {
        kind: 'cancel',
        sessionId: input.sessionId,
        sequence: session.last_sequence,
      });
    }
    answer = { result: 'cancelled', state: 'cancelling', sequence: session.last_sequence };
  } else {
    answer = { result: 'too_late', state: turn.state, sequence: session.last_sequence };
  }
  await tx.query(
    `insert into commands (tenant, command_id, session_id, turn_id, result, state, sequence, actor)
     values ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [
      input.tenant,
      input.commandId,
      input.sessionId,
      input.turnId,
      answer.result,
      answer.state,
      answer.sequence,
      JSON.stringify(input.actor),
    ],
  );
  return answer;
}
