import type { Queryable } from './db.js';
import type { Execution } from '../protocol/missions.js';
import { toExecutionProjection, type ExecutionRow } from './getExecution.js';
import { encodeCursor } from './listSessions.js';
import { viewerParams, visibleSql, type Viewer } from './visibility.js';

/**
 * A tenant's executions whose session the viewer may see (an execution is its session's
 * work: it follows the session's visibility), newest first, filtered by mission, status,
 * user and workspace. The cursor is
 * the (created_at, execution_id) of the last item, so a page boundary is stable while
 * executions keep being dispatched.
 */
export async function listExecutions(
  db: Queryable,
  tenant: string,
  viewer: Viewer,
  options: {
    mission: string | null;
    status: string | null;
    user: string | null;
    workspaceId?: string | null;
    limit: number;
    cursor: { createdAt: string; executionId: string } | null;
  },
): Promise<{ items: Execution[]; next_cursor: string | null }> {
  const params: unknown[] = [
    tenant,
    options.mission,
    options.status,
    options.user,
    options.limit + 1,
    ...viewerParams(viewer),
    options.workspaceId ?? null,
  ];
  let after = '';
  if (options.cursor) {
    params.push(options.cursor.createdAt, options.cursor.executionId);
    after = 'and (e.created_at, e.execution_id) < ($11::timestamptz, $12)';
  }
  const found = await db.query<ExecutionRow>(
    `select e.* from executions e join sessions s on s.session_id = e.session_id
      where e.tenant = $1
        and ($2::text is null or e.mission = $2)
        and ($3::text is null or e.status = $3)
        and ($4::text is null or e.user_name = $4)
        and ($10::text is null or e.workspace_id = $10)
        and ${visibleSql('s', 6)} ${after}
      order by e.created_at desc, e.execution_id desc
      limit $5`,
    params,
  );
  const rows = found.rows.slice(0, options.limit);
  const last = rows[rows.length - 1];
  return {
    items: rows.map(toExecutionProjection),
    next_cursor:
      found.rows.length > options.limit && last
        ? encodeCursor([last.created_at.toISOString(), last.execution_id])
        : null,
  };
}
