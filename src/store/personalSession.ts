import { newSessionId } from '../ids.js';
import { isUniqueViolation, type Db } from './db.js';
import { createSession } from './createSession.js';

/**
 * Seed 003's personal thread: the caller's one active session with an agent, created (with
 * the agent's greeting) if there is none. "One" is the database's rule — a unique index
 * over (tenant, user, agent) of the active rows — so two first calls at once create one
 * session: the loser's transaction rolls back whole and re-reads the winner's.
 */
export async function personalSession(
  db: Db,
  input: { tenant: string; user: string; agent: string; greeting: string | null },
): Promise<{ sessionId: string; created: boolean }> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await db.transaction(async (tx) => {
        const found = await tx.query<{ session_id: string }>(
          `select session_id from personal_sessions
            where tenant = $1 and user_name = $2 and agent = $3 and archived_at is null`,
          [input.tenant, input.user, input.agent],
        );
        const existing = found.rows[0];
        if (existing) return { sessionId: existing.session_id, created: false };
        const session = await createSession(tx, {
          tenant: input.tenant,
          sessionId: newSessionId(),
          agent: input.agent,
          title: `${input.agent} (personal)`,
          greeting: input.greeting,
          // Personal means private: its user (and, as for any session, an admin and the
          // agent's approvers) sees it, nobody else.
          owner: input.user,
          visibility: 'private',
        });
        await tx.query(
          `insert into personal_sessions (session_id, tenant, user_name, agent) values ($1, $2, $3, $4)`,
          [session.session_id, input.tenant, input.user, input.agent],
        );
        return { sessionId: session.session_id, created: true };
      });
    } catch (error) {
      if (!isUniqueViolation(error) || attempt >= 3) throw error;
    }
  }
}
