import type { Queryable } from './db.js';
import { taskTurnColumns, type TaskTurnRow } from './findTaskTurn.js';
import { viewerParams, visibleSql, type Viewer } from './visibility.js';

/**
 * The viewer's own turns (its messages' author) whose id starts with `prefix`, in
 * sessions it may see, newest first (by `created_at` to the millisecond, then id); the
 * cursor is the (created_at, turn_id) of the last item of the page before.
 */
export async function listTaskTurns(
  db: Queryable,
  filter: { tenant: string; prefix: string; viewer: Viewer },
  page: { limit: number; cursor: { createdAt: string; turnId: string } | null },
): Promise<{ rows: TaskTurnRow[]; more: boolean }> {
  // $4, the viewer's user (viewerParams), is the author the messages must have.
  const found = await db.query<TaskTurnRow>(
    `select ${taskTurnColumns}
       from turns t
       join sessions s on s.session_id = t.session_id
       join messages m on m.tenant = t.tenant and m.session_id = t.session_id
                      and m.turn_id = t.turn_id and m.role = 'user'
      where t.tenant = $1 and starts_with(t.turn_id, $2) and m.author = $4
        and ${visibleSql('s', 3)}
        and ($8::timestamptz is null
             or (date_trunc('milliseconds', t.created_at), t.turn_id) < ($8::timestamptz, $9::text))
      order by date_trunc('milliseconds', t.created_at) desc, t.turn_id desc
      limit $7`,
    [
      filter.tenant,
      filter.prefix,
      ...viewerParams(filter.viewer),
      page.limit + 1,
      page.cursor?.createdAt ?? null,
      page.cursor?.turnId ?? null,
    ],
  );
  return { rows: found.rows.slice(0, page.limit), more: found.rows.length > page.limit };
}
