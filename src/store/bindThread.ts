import type { Visibility } from '../config/types.js';
import { newSessionId } from '../ids.js';
import { createSession } from './createSession.js';
import { isUniqueViolation, type Db } from './db.js';

export interface BindThreadInput {
  tenant: string;
  adapter: string;
  threadId: string;
  agent: string;
  greeting: string | null;
  /** The author of the thread's first message (null: unknown, an admin's to manage). */
  owner?: string | null;
  /** The agent's visibility (default `tenant`). */
  visibility?: Visibility;
  /** The platform's context of this message (merged into the thread's), or null. */
  context: Record<string, string> | null;
}

/**
 * The session of a platform thread: found, or created with its binding in one
 * transaction (greeting included, as for any new session). Two first messages of one
 * thread at once race on the binding's primary key: the loser rolls back whole, its
 * session included, and finds the winner's.
 */
export async function bindThread(db: Db, input: BindThreadInput): Promise<string> {
  const context = JSON.stringify(input.context ?? {});
  for (let attempt = 0; ; attempt++) {
    try {
      return await db.transaction(async (tx) => {
        const found = await tx.query<{ session_id: string }>(
          `update adapter_threads set context = context || $4::jsonb
            where tenant = $1 and adapter = $2 and thread_id = $3
            returning session_id`,
          [input.tenant, input.adapter, input.threadId, context],
        );
        if (found.rows[0]) return found.rows[0].session_id;
        const session = await createSession(tx, {
          tenant: input.tenant,
          sessionId: newSessionId(),
          agent: input.agent,
          title: null,
          greeting: input.greeting,
          owner: input.owner ?? null,
          visibility: input.visibility ?? 'tenant',
        });
        // Folding starts at 0: a greeting journaled just now is posted like any reply.
        await tx.query(
          `insert into adapter_threads (tenant, adapter, thread_id, session_id, context)
           values ($1, $2, $3, $4, $5::jsonb)`,
          [input.tenant, input.adapter, input.threadId, session.session_id, context],
        );
        return session.session_id;
      });
    } catch (error) {
      if (!isUniqueViolation(error) || attempt >= 3) throw error;
    }
  }
}
