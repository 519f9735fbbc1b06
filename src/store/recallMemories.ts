import type { Queryable } from './db.js';
import type { MemoryOwner } from './applyMemoryEffects.js';

export interface RecalledMemory {
  memory_id: string;
  text: string;
  created_at: string;
  /** Buffered by the running turn, not committed yet. */
  pending: boolean;
  rank: number;
}

/** Words of a free-text query as an OR tsquery: any word may match, better matches rank higher. */
export function anyWordQuery(query: string): string {
  const words = query.match(/[\p{L}\p{N}]+/gu) ?? [];
  return [...new Set(words.map((word) => word.slice(0, 64).toLowerCase()))]
    .slice(0, 32)
    .join(' | ');
}

/**
 * The owner's memories matching `query`, ranked by full-text search (English stemming,
 * `ts_rank`), newest first among equals: the committed ones (minus those the running turn
 * forgot) and the ones the running turn buffered, ranked by the same SQL so both engines
 * and both kinds agree.
 */
export async function recallMemories(
  db: Queryable,
  owner: MemoryOwner,
  query: string,
  turn: { pending: { memory_id: string; text: string }[]; forgotten: string[] },
  limit: number,
): Promise<RecalledMemory[]> {
  const tsquery = anyWordQuery(query);
  if (tsquery === '') return [];
  const found = await db.query<{
    memory_id: string;
    text: string;
    created_at: Date;
    pending: boolean;
    rank: number;
  }>(
    `with q as (select to_tsquery('english', $4) as query)
     select m.memory_id, m.text, m.created_at, false as pending,
            ts_rank(m.search, q.query)::float8 as rank
       from memories m, q
      where m.tenant = $1 and m.agent = $2 and m.user_id = $3
        and m.search @@ q.query
        and not (m.memory_id = any($7::text[]))
     union all
     select p.memory_id, p.text, now(), true,
            ts_rank(to_tsvector('english', p.text), q.query)::float8
       from unnest($5::text[], $6::text[]) as p(memory_id, text), q
      where to_tsvector('english', p.text) @@ q.query
      order by rank desc, created_at desc, memory_id desc
      limit $8`,
    [
      owner.tenant,
      owner.agent,
      owner.user,
      tsquery,
      turn.pending.map((memory) => memory.memory_id),
      turn.pending.map((memory) => memory.text),
      turn.forgotten,
      limit,
    ],
  );
  return found.rows.map((row) => ({
    memory_id: row.memory_id,
    text: row.text,
    created_at: row.created_at.toISOString(),
    pending: row.pending,
    rank: row.rank,
  }));
}
