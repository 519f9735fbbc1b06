import { ParleyError } from '../errors.js';
import type { Db } from './db.js';
import { notifyWakeup } from './wakeups.js';

/**
 * Deletes a session and its text everywhere, in ONE transaction that takes the session row
 * first (the lock order of every writer, docs/architecture.md):
 * - the rows that hang off the session by foreign key go with it (`on delete cascade`):
 *   the journal (`events`), the transcript (`messages`), `turns`, `commands`,
 *   `option_offers`, `input_requests`, `attachments`, `rewinds`, `personal_sessions`, the
 *   platform binding (`adapter_threads`) and outbox (`adapter_replies`), the webhook
 *   `webhook_streams` and `webhook_deliveries`, and an ended execution of the session
 *   (`executions`); that execution's `execution_commands` are deleted here;
 * - the Chat SDK's state of a bound thread that holds its messages (its message history,
 *   also the copies kept in its channel's; its queued messages, thread state, subscription);
 * - with `deleteMemories` (`retention.delete_memories`), the memories its turns created.
 * `usage` rows stay: accounting, no text. A worker holding the session's lease finds its
 * token-gated writes apply nothing and stops; the `deleted` wake-up ends open streams.
 *
 * An execution that has not ended still works in its session (or its threads' or
 * answering agents' sessions): `session_busy` until it is cancelled or done. Returns false
 * when there is no such session (a retried DELETE).
 */
export async function deleteSession(
  db: Db,
  input: { tenant: string; sessionId: string; deleteMemories: boolean },
): Promise<boolean> {
  return db.transaction(async (tx) => {
    const session = (
      await tx.query<{ last_sequence: number }>(
        'select last_sequence from sessions where tenant = $1 and session_id = $2 for update',
        [input.tenant, input.sessionId],
      )
    ).rows[0];
    if (!session) return false;
    const busy = await tx.query(
      `select 1 from executions x
        where x.tenant = $1 and x.ended_at is null
          and (x.session_id = $2
               or exists (select 1 from executions c
                           where c.parent_execution_id = x.execution_id and c.tenant = $1
                             and c.session_id = $2)
               or exists (select 1 from jsonb_each_text(x.resolvers) r where r.value = $2))
        limit 1`,
      [input.tenant, input.sessionId],
    );
    if (busy.rowCount > 0) {
      throw new ParleyError(
        'session_busy',
        'an execution is still working in this session: cancel it first',
        { state: 'execution_running' },
      );
    }
    await tx.query(
      `delete from execution_commands c using executions x
        where x.tenant = $1 and x.session_id = $2
          and c.tenant = x.tenant and c.execution_id = x.execution_id`,
      [input.tenant, input.sessionId],
    );
    const threads = (
      await tx.query<{ thread_id: string }>(
        'select thread_id from adapter_threads where session_id = $1',
        [input.sessionId],
      )
    ).rows.map((row) => row.thread_id);
    if (threads.length > 0) {
      // The SDK's message history is a list per thread (`msg-history:<thread>`), copied into
      // its channel's list: each entry is a message as JSON, naming its thread.
      await tx.query(
        `delete from chat_state_lists
          where list_key = any(select 'msg-history:' || t from unnest($1::text[]) t)
             or (left(list_key, 12) = 'msg-history:' and (value::jsonb ->> 'threadId') = any($1::text[]))`,
        [threads],
      );
      await tx.query(
        `delete from chat_state_cache
          where cache_key = any(select 'thread-state:' || t from unnest($1::text[]) t)`,
        [threads],
      );
      await tx.query('delete from chat_state_queues where thread_id = any($1::text[])', [threads]);
      await tx.query('delete from chat_state_subscriptions where thread_id = any($1::text[])', [
        threads,
      ]);
    }
    if (input.deleteMemories) {
      await tx.query('delete from memories where tenant = $1 and session_id = $2', [
        input.tenant,
        input.sessionId,
      ]);
    }
    // The user's library keeps its photos (their own copy of the bytes), not what ties
    // them to this session: its ids, and a generated image's prompt (its title too, while
    // it is the prompt).
    await tx.query(
      `update photos
          set source = source - 'session_id' - 'turn_id' - 'tool_call_id' - 'attachment_id' - 'prompt',
              title = case when title = source ->> 'prompt' then null else title end
        where tenant = $1 and source ->> 'session_id' = $2`,
      [input.tenant, input.sessionId],
    );
    await tx.query('delete from sessions where session_id = $1', [input.sessionId]);
    await notifyWakeup(tx, {
      kind: 'deleted',
      sessionId: input.sessionId,
      sequence: session.last_sequence,
    });
    return true;
  });
}
