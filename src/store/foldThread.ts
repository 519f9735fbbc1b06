import type { ParleyEvent } from '../protocol/events.js';
import type { Db } from './db.js';
import { readEvents } from './readEvents.js';

/** An outbox row as folding reads and writes it (see adapters/delivery/content.ts). */
export interface FoldedRow {
  reply_id: string;
  kind: 'reply' | 'approval' | 'notice';
  turn_id: string | null;
  request_id: string | null;
  content: unknown;
  version: number;
  final: boolean;
  state: 'pending' | 'delivered' | 'dead';
  platform_message_id: string | null;
}

export interface ThreadFold {
  tenant: string;
  adapter: string;
  thread_id: string;
  open_reply_id: string | null;
  typing: boolean;
}

/** The pure step: what the events change (adapters/delivery/fold.ts). */
export type FoldStep = (
  thread: ThreadFold,
  events: ParleyEvent[],
  rows: FoldedRow[],
) => { openReplyId: string | null; typing: boolean; touched: FoldedRow[] };

const batch = 500;

/**
 * Folds a bound session's new journal events into its platform outbox, in one
 * transaction that also advances the thread's `followed_sequence`: each event is folded
 * exactly once, and a reply committed to the journal reaches the outbox even if the
 * process died before it was sent. The thread row is taken with SKIP LOCKED, so two
 * processes never fold one thread at once. Returns how many events were folded (0: none
 * new, or another process holds the thread) and whether more are waiting.
 */
export async function foldThread(
  db: Db,
  sessionId: string,
  step: FoldStep,
): Promise<{ folded: number; more: boolean }> {
  return db.transaction(async (tx) => {
    // The session row first (the one lock order, docs/architecture.md): a session being
    // deleted is waited for, then found gone, instead of deadlocking with its deletion.
    const session = await tx.query('select 1 from sessions where session_id = $1 for key share', [
      sessionId,
    ]);
    if (session.rowCount === 0) return { folded: 0, more: false };
    const thread = (
      await tx.query<ThreadFold & { followed_sequence: number }>(
        `select tenant, adapter, thread_id, open_reply_id, typing, followed_sequence
           from adapter_threads where session_id = $1 for update skip locked`,
        [sessionId],
      )
    ).rows[0];
    if (!thread) return { folded: 0, more: false };
    const events = await readEvents(tx, sessionId, thread.followed_sequence, batch);
    if (events.length === 0) return { folded: 0, more: false };
    const requests = new Set<string>();
    for (const event of events) {
      if (event.type === 'input_resolved') requests.add(event.request_id);
      if (event.type === 'message' && event.message.option) {
        requests.add(event.message.option.request_id);
      }
    }
    const rows = (
      await tx.query<FoldedRow>(
        `select reply_id, kind, turn_id, request_id, content, version, final, state,
                platform_message_id
           from adapter_replies
          where session_id = $1 and (reply_id = $2 or request_id = any($3::text[]))`,
        [sessionId, thread.open_reply_id, [...requests]],
      )
    ).rows;
    const result = step(thread, events, rows);
    for (const row of result.touched) {
      await tx.query(
        `insert into adapter_replies (reply_id, tenant, adapter, thread_id, session_id, turn_id,
                                      kind, request_id, content, version, final, state)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, $10, $11, $12)
         on conflict (reply_id) do update
           set content = excluded.content, version = excluded.version, final = excluded.final,
               request_id = excluded.request_id, updated_at = now(),
               state = case
                         when excluded.state = 'delivered' then 'delivered'
                         when adapter_replies.state = 'dead' then 'dead'
                         when excluded.final and excluded.version <= adapter_replies.delivered_version
                           then 'delivered'
                         else 'pending'
                       end`,
        [
          row.reply_id,
          thread.tenant,
          thread.adapter,
          thread.thread_id,
          sessionId,
          row.turn_id,
          row.kind,
          row.request_id,
          JSON.stringify(row.content),
          row.version,
          row.final,
          row.state,
        ],
      );
    }
    const last = (events[events.length - 1] as ParleyEvent).sequence;
    await tx.query(
      `update adapter_threads set followed_sequence = $2, open_reply_id = $3, typing = $4
        where session_id = $1`,
      [sessionId, last, result.openReplyId, result.typing],
    );
    return { folded: events.length, more: events.length === batch };
  });
}
