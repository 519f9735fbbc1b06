import type { Queryable } from './db.js';
import type { TranscriptMessage } from './types.js';

interface MessageRow {
  message_id: string;
  role: TranscriptMessage['role'];
  author: string;
  content: string;
  turn_id: string | null;
  sequence: number;
  created_at: Date;
}

/** The durable transcript, newest first; `before` is a journal sequence (exclusive). */
export async function listMessages(
  db: Queryable,
  tenant: string,
  sessionId: string,
  options: { before: number | null; limit: number },
): Promise<{ items: TranscriptMessage[]; next_cursor: string | null }> {
  const found = await db.query<MessageRow>(
    `select message_id, role, author, content, turn_id, sequence, created_at
       from messages
      where tenant = $1 and session_id = $2 and sequence < $3
      order by sequence desc, role desc
      limit $4`,
    [tenant, sessionId, options.before ?? Number.MAX_SAFE_INTEGER, options.limit + 1],
  );
  const rows = found.rows.slice(0, options.limit);
  const last = rows[rows.length - 1];
  return {
    items: rows.map(toMessage),
    next_cursor: found.rows.length > options.limit && last ? String(last.sequence) : null,
  };
}

/**
 * The last `limit` messages before a sequence, oldest first: the model's history. The
 * model sees its raw replies, also where `completion_text` replaced the visible one.
 */
export async function recentMessages(
  db: Queryable,
  sessionId: string,
  beforeSequence: number,
  limit: number,
): Promise<TranscriptMessage[]> {
  const found = await db.query<MessageRow>(
    `select message_id, role, author, coalesce(raw_content, content) as content, turn_id, sequence,
            created_at
       from messages
      where session_id = $1 and sequence < $2
      order by sequence desc
      limit $3`,
    [sessionId, beforeSequence, limit],
  );
  return found.rows.reverse().map(toMessage);
}

function toMessage(row: MessageRow): TranscriptMessage {
  return {
    id: row.message_id,
    role: row.role,
    author: row.author,
    content: row.content,
    turn_id: row.turn_id,
    sequence: row.sequence,
    created_at: row.created_at.toISOString(),
  };
}
