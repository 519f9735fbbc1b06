import type { Db } from './db.js';
import { recordOutboxFailure } from './recordOutboxFailure.js';

/**
 * The outcome of one delivery attempt of an outbox row, written only while the sender
 * still holds its lease. A success records the platform's message id (every later change
 * is an edit of it) and the version shown; the row is done once its final version is
 * shown, else it waits at least `nextAfterMs` (the platform's edit rate) before the next
 * edit. A failure counts an attempt and waits `nextAfterMs`; past the last attempt the
 * row is dead (kept, with its error).
 */
export async function recordReplySent(
  db: Db,
  input: {
    replyId: string;
    token: string;
    version: number;
    /** Null: nothing to show yet (the reply's text was reset before its first post). */
    messageId: string | null;
    stream: unknown;
    nextAfterMs: number;
  },
): Promise<boolean> {
  const updated = await db.query(
    `update adapter_replies
        set platform_message_id = coalesce($3, platform_message_id), delivered_version = greatest(delivered_version, $4),
            stream = $5::jsonb, attempts = 0, last_error = null, last_sent_at = now(),
            next_attempt_at = now() + $6 * interval '1 millisecond',
            lease_token = null, lease_expires_at = null, updated_at = now(),
            state = case when final and greatest(delivered_version, $4) >= version
                         then 'delivered' else 'pending' end
      where reply_id = $1 and lease_token = $2`,
    [
      input.replyId,
      input.token,
      input.messageId,
      input.version,
      input.stream === null ? null : JSON.stringify(input.stream),
      input.nextAfterMs,
    ],
  );
  return updated.rowCount > 0;
}

/** A failed attempt of an outbox row (recordOutboxFailure.ts). */
export function recordReplyFailed(
  db: Db,
  input: {
    replyId: string;
    token: string;
    error: string;
    nextAfterMs: number;
    maxAttempts: number;
    /** Progress kept even though the attempt failed (a stream that had to be given up). */
    stream?: unknown;
  },
): Promise<boolean> {
  return recordOutboxFailure(db, 'replies', {
    id: input.replyId,
    token: input.token,
    error: input.error,
    nextAfterMs: input.nextAfterMs,
    maxAttempts: input.maxAttempts,
    also: {
      set: `updated_at = now(), stream = case when $6::boolean then $7::jsonb else stream end`,
      params: [
        input.stream !== undefined,
        input.stream === undefined || input.stream === null ? null : JSON.stringify(input.stream),
      ],
    },
  });
}
