import type { Queryable } from './db.js';
import { viewerParams, visibleSql, type Viewer } from './visibility.js';

/** A turn as A2A's `ListTasks` pages them (the task itself is folded from the journal). */
export interface AgentTurnRow {
  turn_id: string;
  session_id: string;
  admitted_sequence: number;
  created_at: Date;
}

export type TurnState = 'queued' | 'running' | 'done' | 'error' | 'cancelled';

/**
 * The turns of one agent's sessions that the viewer may see, newest first (by `created_at`
 * to the millisecond, then id), of one session and of some states when asked; and how
 * many match in all. `endedSince`: only turns not ended, or ended at or after it. The
 * cursor is the (created_at, turn_id) of the last item of the page before.
 */
export async function listAgentTurns(
  db: Queryable,
  filter: {
    tenant: string;
    agent: string;
    viewer: Viewer;
    sessionId: string | null;
    states: readonly TurnState[] | null;
    endedSince: string | null;
  },
  page: { limit: number; cursor: { createdAt: string; turnId: string } | null },
): Promise<{ rows: AgentTurnRow[]; total: number; more: boolean }> {
  const params: unknown[] = [
    filter.tenant,
    filter.agent,
    filter.sessionId,
    filter.states,
    filter.endedSince,
    ...viewerParams(filter.viewer),
  ];
  const where = `t.tenant = $1 and s.agent = $2
        and ($3::text is null or t.session_id = $3)
        and ($4::text[] is null or t.state = any($4::text[]))
        and ($5::timestamptz is null or t.completed_at is null or t.completed_at >= $5)
        and ${visibleSql('s', 6)}`;
  const counted = await db.query<{ total: number }>(
    `select count(*)::int as total
       from turns t join sessions s on s.session_id = t.session_id
      where ${where}`,
    params,
  );
  params.push(page.limit + 1, page.cursor?.createdAt ?? null, page.cursor?.turnId ?? null);
  const found = await db.query<AgentTurnRow>(
    `select t.turn_id, t.session_id, t.admitted_sequence::int as admitted_sequence,
            t.created_at
       from turns t join sessions s on s.session_id = t.session_id
      where ${where}
        and ($11::timestamptz is null
             or (date_trunc('milliseconds', t.created_at), t.turn_id) < ($11::timestamptz, $12::text))
      order by date_trunc('milliseconds', t.created_at) desc, t.turn_id desc
      limit $10`,
    params,
  );
  return {
    rows: found.rows.slice(0, page.limit),
    total: counted.rows[0]?.total ?? 0,
    more: found.rows.length > page.limit,
  };
}
