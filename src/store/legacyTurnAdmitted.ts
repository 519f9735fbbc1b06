import type { Queryable } from './db.js';

/**
 * Was this platform message already admitted under its legacy turn id (the client-shaped
 * one platform turns had before their dotted namespace)? Only the same message counts: a
 * turn of that id in this very session, by this author, with this text. Anything else
 * under that id is a client's turn and does not stop the platform's message.
 */
export async function legacyTurnAdmitted(
  db: Queryable,
  turn: { tenant: string; turnId: string; sessionId: string; author: string; message: string },
): Promise<boolean> {
  const found = await db.query(
    `select 1 from turns t
       join messages m on m.session_id = t.session_id and m.sequence = t.admitted_sequence
      where t.tenant = $1 and t.turn_id = $2 and t.session_id = $3
        and m.author = $4 and m.content = $5`,
    [turn.tenant, turn.turnId, turn.sessionId, turn.author, turn.message],
  );
  return found.rowCount > 0;
}
