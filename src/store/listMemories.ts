import type { Queryable } from './db.js';
import { encodeCursor } from './listSessions.js';

export interface MemoryItem {
  memory_id: string;
  agent: string;
  user: string;
  text: string;
  session_id: string | null;
  created_at: string;
}

export interface MemoryPage {
  items: MemoryItem[];
  next_cursor: string | null;
}

/**
 * A tenant's memories, newest first, filtered to one user and/or one agent when given
 * (null: all), and to those matching `search` (a tsquery as `recall` makes one: any of its
 * words; '' matches nothing). Ids are ULIDs made when a turn buffered the memory, so they sort by age;
 * the cursor is the last id (exact, unlike a timestamp rounded to milliseconds).
 */
export async function listMemories(
  db: Queryable,
  filter: { tenant: string; user: string | null; agent: string | null; search?: string | null },
  page: { limit: number; cursor: string | null },
): Promise<MemoryPage> {
  const params: unknown[] = [
    filter.tenant,
    filter.user,
    filter.agent,
    page.limit + 1,
    filter.search ?? null,
  ];
  let after = '';
  if (page.cursor) {
    params.push(page.cursor);
    after = 'and memory_id < $6';
  }
  const found = await db.query<{
    memory_id: string;
    agent: string;
    user_id: string;
    text: string;
    session_id: string | null;
    created_at: Date;
  }>(
    `select memory_id, agent, user_id, text, session_id, created_at
       from memories
      where tenant = $1
        and ($2::text is null or user_id = $2)
        and ($3::text is null or agent = $3)
        and ($5::text is null or ($5 <> '' and search @@ to_tsquery('english', $5)))
        ${after}
      order by memory_id desc
      limit $4`,
    params,
  );
  const rows = found.rows.slice(0, page.limit);
  const last = rows[rows.length - 1];
  return {
    items: rows.map((row) => ({
      memory_id: row.memory_id,
      agent: row.agent,
      user: row.user_id,
      text: row.text,
      session_id: row.session_id,
      created_at: row.created_at.toISOString(),
    })),
    next_cursor: found.rows.length > page.limit && last ? encodeCursor([last.memory_id]) : null,
  };
}
