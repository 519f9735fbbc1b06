import { ParleyError } from '../errors.js';
import { newEvent, type Actor } from '../protocol/events.js';
import type { Db } from './db.js';
import { journalEvents } from './appendEvents.js';
import { isLiveCheckpoint } from './isLiveCheckpoint.js';

/**
 * Rewinds a session to one of its checkpoints: journals `rewound` and records
 * the range it leaves out, so the next turn's prompt history stops at that checkpoint (the
 * history read in startAttempt honours `rewinds`). The journal and the transcript are
 * append-only: nothing is deleted. Only an idle session rewinds (a queued or running turn
 * would be answered from a history that changes under it: `session_busy`), and only to a
 * checkpoint still in its history (fork reaches the others).
 */
export async function rewindSession(
  db: Db,
  input: { tenant: string; sessionId: string; toSequence: number; actor: Actor },
): Promise<{ session_id: string; to_sequence: number; sequence: number }> {
  return db.transaction(async (tx) => {
    const session = (
      await tx.query<{ state: string; queued: boolean }>(
        `select s.state, s.input_count > s.input_cursor as queued from sessions s
          where s.tenant = $1 and s.session_id = $2 for update`,
        [input.tenant, input.sessionId],
      )
    ).rows[0];
    if (!session) throw new ParleyError('session_not_found', 'no such session');
    if (session.state !== 'idle' || session.queued) {
      throw new ParleyError(
        'session_busy',
        `the session is ${session.state}: rewind it when idle`,
        {
          state: session.state,
        },
      );
    }
    const checkpoint = await isLiveCheckpoint(tx, input.sessionId, input.toSequence);
    if (!checkpoint.exists || checkpoint.rewound) {
      throw new ParleyError(
        'checkpoint_not_found',
        checkpoint.exists
          ? 'to_sequence: that checkpoint was rewound away (fork at it instead)'
          : 'to_sequence: not a checkpoint of this session',
        { field: 'to_sequence' },
      );
    }
    const sequence = await journalEvents(tx, input.sessionId, [
      newEvent('rewound', null, { to_sequence: input.toSequence, actor: input.actor }),
    ]);
    await tx.query(
      'insert into rewinds (tenant, session_id, at_sequence, to_sequence) values ($1, $2, $3, $4)',
      [input.tenant, input.sessionId, sequence, input.toSequence],
    );
    return { session_id: input.sessionId, to_sequence: input.toSequence, sequence };
  });
}
