import type { Visibility } from '../config/types.js';
import { newMessageId } from '../ids.js';
import { newEvent } from '../protocol/events.js';
import type { Queryable } from './db.js';
import { journalEvents } from './appendEvents.js';
import type { SessionRow } from './types.js';

export interface CreateSessionInput {
  tenant: string;
  sessionId: string;
  agent: string;
  title: string | null;
  greeting: string | null;
  /** Who created it: a principal's user, a platform author, an execution's user. */
  owner: string | null;
  visibility: Visibility;
  /** Users who see a `room` besides its owner. */
  members?: string[];
  /**
   * The workspace it is grouped in: the caller checked the owner is a member, and holds
   * the workspace in this transaction (holdWorkspace).
   */
  workspaceId?: string | null;
}

/**
 * Creates a session inside the caller's transaction. The greeting is journaled in the
 * same transaction: it exists before anyone can subscribe (PROTOCOL.md §1).
 */
export async function createSession(tx: Queryable, input: CreateSessionInput): Promise<SessionRow> {
  const created = await tx.query<SessionRow>(
    `insert into sessions (session_id, tenant, agent, title, owner, visibility, members,
                           workspace_id)
     values ($1, $2, $3, $4, $5, $6, $7, $8) returning *`,
    [
      input.sessionId,
      input.tenant,
      input.agent,
      input.title,
      input.owner,
      input.visibility,
      input.members ?? [],
      input.workspaceId ?? null,
    ],
  );
  const session = created.rows[0] as SessionRow;
  if (input.greeting === null) return session;
  const messageId = newMessageId();
  await tx.query(
    `insert into messages (message_id, tenant, session_id, turn_id, role, author, content, sequence)
     values ($1, $2, $3, null, 'assistant', $4, $5, 1)`,
    [messageId, input.tenant, input.sessionId, input.agent, input.greeting],
  );
  const last = await journalEvents(tx, input.sessionId, [
    newEvent('message', null, {
      message: { id: messageId, role: 'assistant', author: input.agent, content: input.greeting },
    }),
  ]);
  return { ...session, last_sequence: last };
}
