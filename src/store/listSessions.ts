import type { Queryable } from './db.js';
import { projectionSelect, toProjection, type SessionProjection } from './getSession.js';
import { viewerParams, visibleSql, type Viewer } from './visibility.js';
import { activeSql, activityOrder } from './activity.js';

export interface SessionPage {
  items: SessionProjection[];
  next_cursor: string | null;
}

/**
 * The sessions of the tenant that the viewer may see (those of one workspace, when
 * `workspaceId` is given), newest activity first. The cursor
 * is the (updated_at, session_id) of the last item, so a page boundary is stable while
 * sessions keep changing.
 */
export async function listSessions(
  db: Queryable,
  tenant: string,
  viewer: Viewer,
  options: {
    limit: number;
    cursor: { updatedAt: string; sessionId: string } | null;
    workspaceId?: string | null;
  },
): Promise<SessionPage> {
  const params: unknown[] = [
    tenant,
    options.limit + 1,
    ...viewerParams(viewer),
    options.workspaceId ?? null,
  ];
  let after = '';
  if (options.cursor) {
    params.push(options.cursor.updatedAt, options.cursor.sessionId);
    after = `and ${activeSql('s', '<=', '$8::timestamptz')}
        and (s.updated_at, s.session_id) < ($8::timestamptz, $9)`;
  }
  const found = await db.query<Parameters<typeof toProjection>[0]>(
    `${projectionSelect}
      where s.tenant = $1 and ${visibleSql('s', 3)}
        and ($7::text is null or s.workspace_id = $7) ${after}
      order by ${activityOrder('s', 'desc')}, s.session_id desc
      limit $2`,
    params,
  );
  const rows = found.rows.slice(0, options.limit);
  const last = rows[rows.length - 1];
  return {
    items: rows.map(toProjection),
    next_cursor:
      found.rows.length > options.limit && last
        ? encodeCursor([last.updated_at.toISOString(), last.session_id])
        : null,
  };
}

export function encodeCursor(parts: (string | number)[]): string {
  return Buffer.from(JSON.stringify(parts)).toString('base64url');
}

/**
 * Returns null for anything that is not a cursor this server made: not base64url JSON, not
 * an array, or holding text the database would refuse (NUL, an unpaired surrogate).
 */
export function decodeCursor(cursor: string): unknown[] | null {
  try {
    const parts: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (!Array.isArray(parts)) return null;
    const storable = (part: unknown) =>
      typeof part !== 'string' ||
      (!part.includes('\u0000') && (part as string & { isWellFormed(): boolean }).isWellFormed());
    return parts.every(storable) ? parts : null;
  } catch {
    return null;
  }
}
