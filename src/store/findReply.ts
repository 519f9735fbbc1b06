import type { Queryable } from './db.js';

export interface ReplyRef {
  reply_id: string;
  session_id: string;
  thread_id: string;
  kind: 'reply' | 'approval' | 'notice';
  request_id: string | null;
  content: Record<string, unknown>;
}

/**
 * An outbox row named by a pressed button (its id is the button's value), within the
 * adapter's own tenant and platform: a button can never reach another tenant's request.
 */
export async function findReply(
  db: Queryable,
  tenant: string,
  adapter: string,
  replyId: string,
): Promise<ReplyRef | null> {
  const found = await db.query<ReplyRef>(
    `select reply_id, session_id, thread_id, kind, request_id, content from adapter_replies
      where reply_id = $1 and tenant = $2 and adapter = $3`,
    [replyId, tenant, adapter],
  );
  return found.rows[0] ?? null;
}
