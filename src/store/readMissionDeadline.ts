import type { Queryable } from './db.js';

/** A mission's deadline keys, as its execution was dispatched with them. */
export interface MissionDeadline {
  approvalTimeoutMs: number | null;
  onTimeout: 'reject' | 'approve' | null;
}

/**
 * The deadline keys of the mission whose execution raised `turnId` in its own session (an
 * iteration `exec.ID.N`), from the execution's spec: an edit of the mission applies to
 * later executions only. Null for any other turn (a person's, a resolver agent's session).
 */
export async function readMissionDeadline(
  db: Queryable,
  sessionId: string,
  turnId: string,
): Promise<MissionDeadline | null> {
  if (!turnId.startsWith('exec.')) return null;
  const found = await db.query<{
    approval_timeout_ms: number | null;
    on_timeout: 'reject' | 'approve' | null;
  }>(
    `select (spec->>'approval_timeout_ms')::bigint as approval_timeout_ms,
            spec->>'on_timeout' as on_timeout
       from executions
      where session_id = $1 and starts_with($2, 'exec.' || execution_id || '.')`,
    [sessionId, turnId],
  );
  const row = found.rows[0];
  if (!row) return null;
  return {
    approvalTimeoutMs: row.approval_timeout_ms === null ? null : Number(row.approval_timeout_ms),
    onTimeout: row.on_timeout,
  };
}
