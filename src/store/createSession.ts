import { newMessageId } from '../ids.js';
import type { Queryable } from './db.js';
import { insertEvents } from './appendEvents.js';
import type { SessionRow } from './types.js';

export interface CreateSessionInput {
  tenant: string;
  sessionId: string;
  agent: string;
  title: string | null;
  greeting: string | null;
}

/**
 * Creates a session inside the caller's transaction. The greeting is journaled in the
 * same transaction: it exists before anyone can subscribe (PROTOCOL.md §1).
 */
export async function createSession(tx: Queryable, input: CreateSessionInput): Promise<SessionRow> {
  const greetingEvents = input.greeting === null ? 0 : 1;
  const created = await tx.query<SessionRow>(
    `insert into sessions (session_id, tenant, agent, title, last_sequence)
     values ($1, $2, $3, $4, $5)
     returning *`,
    [input.sessionId, input.tenant, input.agent, input.title, greetingEvents],
  );
  const session = created.rows[0] as SessionRow;
  if (input.greeting !== null) {
    const messageId = newMessageId();
    await tx.query(
      `insert into messages (message_id, tenant, session_id, turn_id, role, author, content, sequence)
       values ($1, $2, $3, null, 'assistant', $4, $5, 1)`,
      [messageId, input.tenant, input.sessionId, input.agent, input.greeting],
    );
    await insertEvents(tx, input.tenant, input.sessionId, 0, [
      {
        type: 'message',
        payload: {
          message: {
            id: messageId,
            role: 'assistant',
            author: input.agent,
            content: input.greeting,
          },
        },
      },
    ]);
  }
  return session;
}
