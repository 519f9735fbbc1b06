import type { Visibility } from '../config/types.js';
import type { Queryable } from './db.js';
import { viewerParams, visibleSql, type Viewer } from './visibility.js';

/** What a route needs to know about a session it may act on. */
export interface SessionAccess {
  session_id: string;
  agent: string;
  owner: string | null;
  visibility: Visibility;
  members: string[];
}

/**
 * The one check of every single-session route: the session, if it exists in the tenant
 * AND the viewer may see it; null otherwise. Callers answer null exactly as they answer a
 * missing session, so what a principal may not see is indistinguishable from nothing.
 */
export async function findVisibleSession(
  db: Queryable,
  tenant: string,
  sessionId: string,
  viewer: Viewer,
): Promise<SessionAccess | null> {
  const found = await db.query<SessionAccess>(
    {
      name: 'find_visible_session',
      text: `select s.session_id, s.agent, s.owner, s.visibility, s.members from sessions s
              where s.tenant = $1 and s.session_id = $2 and ${visibleSql('s', 3)}`,
    },
    [tenant, sessionId, ...viewerParams(viewer)],
  );
  return found.rows[0] ?? null;
}
