import type { Queryable, Statement } from './db.js';
import type { ClaimStart } from './claimSession.js';
import type { BurstState, ClientTool } from './types.js';

/**
 * A queued turn: an admitted user message not yet answered (its position is past the
 * session's cursor and it was not cancelled while queued).
 */
export interface QueuedTurn {
  turn_id: string;
  position: number;
  admitted_sequence: number;
  message_id: string;
  author: string;
  content: string;
  /** The option this turn chose, if it answered an options offer. */
  option: { request_id: string; value: string } | null;
  /** Ids of the images the turn carries (attachments of its session), or null. */
  attachments: string[] | null;
  /** The agent revision the turn runs with: recorded when it first started (or admitted). */
  agent_revision?: number | null;
  /** The turn's own instructions (appended to the agent's), or null. */
  instructions?: string | null;
  /** Tools the client declared with the turn, which it runs itself, or null. */
  client_tools?: ClientTool[] | null;
}

/**
 * The JSON array of a session's queued turns, oldest first, at most `limit`: one burst.
 * `session` names a row source with the session's `session_id` and `input_cursor`.
 */
export function queuedTurnsSql(session: string, limit: string): string {
  return `select coalesce(json_agg(q order by q.position), '[]'::json) from (
            select t.turn_id, t.position, t.admitted_sequence, m.message_id, m.author, m.content,
                   t.option, t.attachments, t.agent_revision, t.instructions, t.client_tools
              from turns t
              join messages m on m.session_id = t.session_id and m.sequence = t.admitted_sequence
             where t.session_id = ${session}.session_id and t.position > ${session}.input_cursor
               and t.state in ('queued', 'running')
             order by t.position
             limit ${limit}) q`;
}

/** What the lease holder needs to start the next burst of its session. */
export interface SessionTurns {
  last_sequence: number;
  cancel_command_id: string | null;
  burst: BurstState | null;
  queued: QueuedTurn[];
  /** The attempt the claim already started for these turns (claimSession), if it did. */
  started?: ClaimStart | null;
}

const collectStatement: Statement = {
  name: 'collect_turns',
  text: `select s.last_sequence, s.cancel_command_id, s.burst, (${queuedTurnsSql('s', '$2')}) as queued
           from sessions s where s.session_id = $1`,
};

/**
 * The session's queued turns and the state around them, for the lease holder (the only one
 * who moves the cursor). `last_sequence` is what startAttempt checks nothing changed since.
 */
export async function collectTurns(
  db: Queryable,
  sessionId: string,
  limit: number,
): Promise<SessionTurns> {
  const found = await db.query<SessionTurns>(collectStatement, [sessionId, limit]);
  return found.rows[0] as SessionTurns;
}
