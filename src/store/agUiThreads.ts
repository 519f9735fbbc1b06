import { newSessionId } from '../ids.js';
import { createSession, type CreateSessionInput } from './createSession.js';
import { isUniqueViolation, type Db, type Queryable } from './db.js';
import { viewerParams, visibleSql, type Viewer } from './visibility.js';

/** The session an AG-UI thread id names, if the viewer may see it (else as missing). */
export async function findThreadSession(
  db: Queryable,
  tenant: string,
  threadId: string,
  viewer: Viewer,
): Promise<{ session_id: string; agent: string } | null> {
  const found = await db.query<{ session_id: string; agent: string }>(
    `select s.session_id, s.agent
       from ag_ui_threads t join sessions s on s.session_id = t.session_id
      where t.tenant = $1 and t.thread_id = $2 and ${visibleSql('s', 3)}`,
    [tenant, threadId, ...viewerParams(viewer)],
  );
  return found.rows[0] ?? null;
}

/** Whether the tenant has a thread of that id at all (whoever may see its session). */
async function threadExists(db: Queryable, tenant: string, threadId: string): Promise<boolean> {
  const found = await db.query('select 1 from ag_ui_threads where tenant = $1 and thread_id = $2', [
    tenant,
    threadId,
  ]);
  return found.rows.length > 0;
}

/**
 * The first run of a thread: its session and the thread's row in one transaction, so a
 * crash leaves either both or neither. Two first runs racing: the loser rolls back whole
 * and finds the winner's session (null if the viewer may not see it).
 */
export async function createThreadSession(
  db: Db,
  threadId: string,
  session: Omit<CreateSessionInput, 'sessionId'>,
  viewer: Viewer,
): Promise<{ session_id: string; agent: string } | null> {
  try {
    return await db.transaction(async (tx) => {
      const created = await createSession(tx, { ...session, sessionId: newSessionId() });
      await tx.query(
        `insert into ag_ui_threads (tenant, thread_id, session_id) values ($1, $2, $3)`,
        [session.tenant, threadId, created.session_id],
      );
      return { session_id: created.session_id, agent: created.agent };
    });
  } catch (error) {
    if (!isUniqueViolation(error) || !(await threadExists(db, session.tenant, threadId))) {
      throw error;
    }
    return findThreadSession(db, session.tenant, threadId, viewer);
  }
}
