import type { Db, Queryable } from '../../../src/store/db.js';
import {
  eventRowColumns,
  eventRowsFrom,
  toWireEvent,
  type EventRow as StoredEventRow,
} from '../../../src/store/eventRows.js';

/**
 * The whole database as the checker reads it: every table it judges, read in ONE
 * REPEATABLE READ transaction, so that a worker still writing cannot make the counters
 * and the journal disagree between two reads (the same reason as
 * test/support/invariants.ts). Every check then runs on this snapshot in memory.
 */
export interface SessionRow {
  session_id: string;
  state: string;
  last_sequence: number;
  earliest_sequence: number;
  input_count: number;
  input_cursor: number;
  lease_token: string | null;
  /** `host:pid` of the process that took the lease (cli/start.ts). */
  lease_owner: string | null;
  /** The session's domain state (null until first written; read from the database). */
  data?: Record<string, unknown> | null;
}

export interface TurnRow {
  turn_id: string;
  session_id: string;
  position: number | null;
  state: string;
  admitted_sequence: number;
}

export interface MessageRow {
  message_id: string;
  session_id: string;
  sequence: number;
  turn_id: string | null;
  role: string;
  content: string;
}

export interface EventRow {
  session_id: string;
  sequence: number;
  type: string;
  turn_id: string | null;
  payload: Record<string, any>;
}

export interface RequestRow {
  request_id: string;
  session_id: string;
  turn_id: string;
  call_id: string;
  kind: string;
  state: string;
  approved: boolean | null;
  /**
   * When it was asked, when it ends unanswered (null: never), and when it was resolved
   * (read from the database; a history made up in a test may leave them out).
   */
  created_at?: Date;
  deadline_at?: Date | null;
  answered_at?: Date | null;
}

export interface CommandRow {
  command_id: string;
  session_id: string;
  turn_id: string;
  result: string;
  state: string;
}

export interface Snapshot {
  sessions: SessionRow[];
  turns: TurnRow[];
  messages: MessageRow[];
  /** Ordered by session, then sequence. */
  events: EventRow[];
  requests: RequestRow[];
  commands: CommandRow[];
}

export async function readSnapshot(db: Db): Promise<Snapshot> {
  return db.transaction(async (tx) => {
    await tx.query('set transaction isolation level repeatable read');
    return readAll(tx);
  });
}

async function readAll(tx: Queryable): Promise<Snapshot> {
  const sessions = await tx.query<SessionRow>(
    `select session_id, state, last_sequence, earliest_sequence, input_count, input_cursor,
            lease_token, lease_owner, data
       from sessions order by session_id`,
  );
  const turns = await tx.query<TurnRow>(
    `select turn_id, session_id, position, state, admitted_sequence
       from turns order by session_id, position`,
  );
  const messages = await tx.query<MessageRow>(
    `select message_id, session_id, sequence, turn_id, role, content from messages
      order by session_id, sequence`,
  );
  // Through the store's own rebuild: `message` and `done` events keep their text in the
  // transcript row they refer to (src/store/eventRows.ts). `payload` is the whole event as a
  // client receives it.
  const stored = await tx.query<StoredEventRow & { session_id: string }>(
    `select e.session_id, ${eventRowColumns}
       from ${eventRowsFrom}
      order by e.session_id, e.sequence`,
  );
  const events = {
    rows: stored.rows.map((row): EventRow => ({
      session_id: row.session_id,
      sequence: row.sequence,
      type: row.type,
      turn_id: row.turn_id,
      payload: toWireEvent(row),
    })),
  };
  const requests = await tx.query<RequestRow>(
    `select request_id, session_id, turn_id, call_id, kind, state, approved, created_at,
            deadline_at, answered_at
       from input_requests order by session_id, created_at`,
  );
  const commands = await tx.query<CommandRow>(
    'select command_id, session_id, turn_id, result, state from commands order by session_id',
  );
  return {
    sessions: sessions.rows,
    turns: turns.rows,
    messages: messages.rows,
    events: events.rows,
    requests: requests.rows,
    commands: commands.rows,
  };
}
