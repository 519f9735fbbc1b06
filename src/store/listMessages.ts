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
  input_tokens?: number | null;
  output_tokens?: number | null;
  cost_usd?: number | null;
  author_display_name: string | null;
  author_avatar_url: string | null;
  attachments: string[] | null;
}

/**
 * The durable transcript, newest first; `before` is a journal sequence (exclusive). A
 * reply carries what its turn cost (`usage`: every provider call of the burst it answers);
 * a person's message its author's profile (`users`: display name and avatar, null until
 * set), so a room shows names rather than user ids, and the images it carried (its turn's
 * `attachments`), so a client shows them.
 */
export async function listMessages(
  db: Queryable,
  tenant: string,
  sessionId: string,
  options: { before: number | null; limit: number },
): Promise<{ items: TranscriptMessage[]; next_cursor: string | null }> {
  const found = await db.query<MessageRow>(
    `select m.message_id, m.role, m.author, m.content, m.turn_id, m.sequence, m.created_at,
            t.input_tokens, t.output_tokens, t.cost_usd,
            u.display_name as author_display_name, u.avatar_url as author_avatar_url,
            p.attachments
       from messages m
       left join turns t on m.role = 'assistant' and t.tenant = m.tenant and t.turn_id = m.turn_id
       left join turns p on m.role = 'user' and p.tenant = m.tenant and p.turn_id = m.turn_id
                        and p.session_id = m.session_id and p.admitted_sequence = m.sequence
       left join users u on m.role = 'user' and u.tenant = m.tenant and u.user_name = m.author
      where m.tenant = $1 and m.session_id = $2 and m.sequence < $3
      order by m.sequence desc, m.role desc
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

function toMessage(row: MessageRow): TranscriptMessage {
  const usage =
    row.role === 'assistant' && row.turn_id !== null && row.input_tokens != null
      ? {
          usage: {
            input_tokens: row.input_tokens,
            output_tokens: row.output_tokens ?? 0,
            cost_usd: row.cost_usd ?? 0,
          },
        }
      : {};
  const attachments =
    row.attachments && row.attachments.length > 0 ? { attachments: row.attachments } : {};
  return {
    ...usage,
    ...attachments,
    id: row.message_id,
    role: row.role,
    author: row.author,
    author_display_name: row.author_display_name,
    author_avatar_url: row.author_avatar_url,
    content: row.content,
    turn_id: row.turn_id,
    sequence: row.sequence,
    created_at: row.created_at.toISOString(),
  };
}
