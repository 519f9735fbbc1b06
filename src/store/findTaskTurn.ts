import type { Queryable } from './db.js';
import { viewerParams, visibleSql, type Viewer } from './visibility.js';

/** A turn as an MCP task shows it (the status is the journal's: readTurnOutcome). */
export interface TaskTurnRow {
  turn_id: string;
  session_id: string;
  admitted_sequence: number;
  created_at: Date;
  /** When it ended, else when its session's journal last moved since its admission. */
  updated_at: Date;
}

/** The task columns, over `turns t` (shared with listTaskTurns). */
export const taskTurnColumns = `t.turn_id, t.session_id, t.admitted_sequence::int as admitted_sequence,
            t.created_at,
            coalesce(t.completed_at,
                     (select e.at from events e
                       where e.session_id = t.session_id and e.sequence >= t.admitted_sequence
                       order by e.sequence desc limit 1),
                     t.created_at) as updated_at`;

/**
 * One turn of the viewer's own (its message's author) by id, in a session the viewer may
 * see; null for anyone else's turn, as for no turn.
 */
export async function findTaskTurn(
  db: Queryable,
  tenant: string,
  turnId: string,
  viewer: Viewer,
): Promise<TaskTurnRow | null> {
  // $4, the viewer's user (viewerParams), is the author the message must have.
  const found = await db.query<TaskTurnRow>(
    `select ${taskTurnColumns}
       from turns t
       join sessions s on s.session_id = t.session_id
       join messages m on m.tenant = t.tenant and m.session_id = t.session_id
                      and m.turn_id = t.turn_id and m.role = 'user'
      where t.tenant = $1 and t.turn_id = $2 and m.author = $4
        and ${visibleSql('s', 3)}`,
    [tenant, turnId, ...viewerParams(viewer)],
  );
  return found.rows[0] ?? null;
}
