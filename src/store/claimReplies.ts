import { claimOutbox } from './claimOutbox.js';
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
  /** An earlier sender claimed it and recorded nothing: its post may have reached the platform. */
  interrupted: boolean;
  created_at: Date;
  /** The thread's context (Slack: the recipient of a stream). */
  context: Record<string, unknown>;
}

/**
 * Takes platform outbox rows that are due (claimOutbox.ts): changed since last delivered,
 * their retry time come, not leased by a live sender. A row that must post a new message
 * waits until every earlier row of its thread has its message, so a thread reads in the
 * order the journal wrote it; edits of existing messages go at any time.
 */
export function claimReplies(
  db: Db,
  input: { adapters: string[]; token: string; leaseMs: number; limit: number },
): Promise<ClaimedReply[]> {
  return claimOutbox<ClaimedReply>(
    db,
    'replies',
    {
      returning: `r.reply_id, r.adapter, r.thread_id, r.session_id, r.kind, r.content, r.version,
                  r.final, r.platform_message_id, r.stream, r.attempts, due.interrupted, r.created_at,
                  t.context`,
      join: { table: 'adapter_threads t', on: 't.session_id = r.session_id' },
    },
    { senders: input.adapters, token: input.token, leaseMs: input.leaseMs, limit: input.limit },
  );
}
