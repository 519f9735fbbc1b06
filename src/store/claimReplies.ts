import type { Db } from './db.js';

export interface ClaimedReply {
  reply_id: string;
  adapter: string;
  thread_id: string;
  session_id: string;
  kind: 'reply' | 'approval' | 'notice';
  content: Record<string, unknown>;
  version: number;
  final: boolean;
  platform_message_id: string | null;
  stream: unknown;
  attempts: number;
  created_at: Date;
  /** The thread's context (Slack: the recipient of a stream). */
  context: Record<string, unknown>;
}

/**
 * Takes outbox rows that are due: changed since last delivered, their retry time come,
 * and not leased by a live sender. A row that must post a new message waits until every
 * earlier row of its thread has its message, so a thread reads in the order the journal
 * wrote it; edits of existing messages go at any time. The lease (token and expiry) is
 * what makes a second process skip the row, and what a crashed sender's rows wait out.
 */
export async function claimReplies(
  db: Db,
  input: { adapters: string[]; token: string; leaseMs: number; limit: number },
): Promise<ClaimedReply[]> {
  const claimed = await db.query<ClaimedReply>(
    `with due as (
       select r.reply_id from adapter_replies r
        where r.state = 'pending' and r.version > r.delivered_version
          and r.next_attempt_at <= now() and r.adapter = any($1::text[])
          and (r.lease_expires_at is null or r.lease_expires_at < now())
          and (r.platform_message_id is not null or not exists (
                 select 1 from adapter_replies e
                  where e.session_id = r.session_id and e.reply_id < r.reply_id
                    and e.state = 'pending' and e.platform_message_id is null
                    and (e.version > e.delivered_version or not e.final)))
        order by r.next_attempt_at, r.reply_id
        limit $4
        for update of r skip locked
     )
     update adapter_replies r
        set lease_token = $2, lease_expires_at = now() + $3 * interval '1 millisecond'
       from due, adapter_threads t
      where r.reply_id = due.reply_id and t.session_id = r.session_id
      returning r.reply_id, r.adapter, r.thread_id, r.session_id, r.kind, r.content, r.version,
                r.final, r.platform_message_id, r.stream, r.attempts, r.created_at, t.context`,
    [input.adapters, input.token, input.leaseMs, input.limit],
  );
  return claimed.rows;
}
