import { ParleyError } from '../errors.js';
import { newMessageId, newSessionId } from '../ids.js';
import { newEvent, type Actor } from '../protocol/events.js';
import type { Db } from './db.js';
import { journalEvents } from './appendEvents.js';
import { isLiveCheckpoint } from './isLiveCheckpoint.js';
import type { SessionRow } from './types.js';

/**
 * Forks a session at one of its checkpoints: a new session, same agent, whose
 * transcript is the original's as it stood then — rewound-away messages left out — so a
 * person can try another path. One transaction: the new session, its transcript (each
 * message journaled as a `message` event, so its stream shows the conversation), `forked`
 * in both sessions. The transcript is copied: the prompt's history reads one session's
 * rows, and following a chain of parents there would cost every turn; a fork costs its
 * text once. The fork is owned by whoever forked it and keeps the original's visibility.
 * Tenant-scoped: another tenant's session is `session_not_found`.
 */
export async function forkSession(
  db: Db,
  input: {
    tenant: string;
    sessionId: string;
    atSequence: number;
    title: string | null;
    actor: Actor;
  },
): Promise<string> {
  return db.transaction(async (tx) => {
    const original = (
      await tx.query<SessionRow>(
        'select * from sessions where tenant = $1 and session_id = $2 for update',
        [input.tenant, input.sessionId],
      )
    ).rows[0];
    if (!original) throw new ParleyError('session_not_found', 'no such session');
    const checkpoint = await isLiveCheckpoint(tx, input.sessionId, input.atSequence);
    if (!checkpoint.exists) {
      throw new ParleyError(
        'checkpoint_not_found',
        'at_sequence: not a checkpoint of this session',
        {
          field: 'at_sequence',
        },
      );
    }
    const transcript = await tx.query<{
      role: 'user' | 'assistant' | 'system';
      author: string;
      content: string;
      raw_content: string | null;
    }>(
      `select m.role, m.author, m.content, m.raw_content from messages m
        where m.session_id = $1 and m.sequence <= $2
          and not exists (select 1 from rewinds w where w.session_id = $1
                            and w.at_sequence <= $2
                            and m.sequence > w.to_sequence and m.sequence < w.at_sequence)
        order by m.sequence`,
      [input.sessionId, input.atSequence],
    );
    const sessionId = newSessionId();
    // The fork is its forker's; it is seen as the original was (visibility, members).
    await tx.query(
      `insert into sessions (session_id, tenant, agent, title, owner, visibility, members)
       values ($1, $2, $3, $4, $5, $6, $7)`,
      [
        sessionId,
        input.tenant,
        original.agent,
        input.title ?? `${original.title ?? 'session'} (fork)`,
        input.actor.user,
        original.visibility,
        original.members,
      ],
    );
    const events = [];
    for (const [index, message] of transcript.rows.entries()) {
      const messageId = newMessageId();
      await tx.query(
        `insert into messages (message_id, tenant, session_id, turn_id, role, author, content,
                               raw_content, sequence)
         values ($1, $2, $3, null, $4, $5, $6, $7, $8)`,
        [
          messageId,
          input.tenant,
          sessionId,
          message.role,
          message.author,
          message.content,
          message.raw_content,
          index + 1,
        ],
      );
      events.push(
        newEvent('message', null, {
          message: {
            id: messageId,
            role: message.role,
            author: message.author,
            content: message.content,
          },
        }),
      );
    }
    const forked = newEvent('forked', null, {
      from_session_id: input.sessionId,
      to_session_id: sessionId,
      at_sequence: input.atSequence,
      actor: input.actor,
    });
    await journalEvents(tx, sessionId, [...events, forked]);
    await journalEvents(tx, input.sessionId, [forked]);
    return sessionId;
  });
}
