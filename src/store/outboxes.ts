/**
 * The outbox tables, as the statements shared by them see them: `adapter_replies`
 * (platform replies, by adapter) and `webhook_deliveries` (by endpoint; its A2A push
 * notifications, by target, as their own outbox). Each row is
 * pending until sent, under a sender's lease (`lease_token`, `lease_expires_at`) while
 * being sent, retried at `next_attempt_at`, and dead past its last attempt. Only the
 * fragments that differ are named here; the statements are in claimOutbox.ts,
 * nextOutboxDue.ts and recordOutboxFailure.ts.
 */
export interface OutboxTable {
  readonly table: string;
  readonly id: string;
  /** The column naming who sends the row (an adapter, an endpoint). */
  readonly sender: string;
  /** A row (alias `r`) that still has something to send. */
  readonly pending: string;
  /**
   * A row (alias `r`) waits for an earlier row (alias `e`) of its session, so the session
   * reads in journal order.
   */
  readonly waitsFor: string;
  /** The tie-break after `next_attempt_at` in claim order. */
  readonly order: string;
}

export const outboxes = {
  replies: {
    table: 'adapter_replies',
    id: 'reply_id',
    sender: 'adapter',
    pending: `r.state = 'pending' and r.version > r.delivered_version`,
    // A row that must post a new message waits until every earlier row of its thread has
    // its message; edits of existing messages go at any time.
    waitsFor: `r.platform_message_id is null and e.session_id = r.session_id
               and e.reply_id < r.reply_id and e.state = 'pending' and e.platform_message_id is null
               and (e.version > e.delivered_version or not e.final)`,
    order: 'r.reply_id',
  },
  webhooks: {
    table: 'webhook_deliveries',
    id: 'delivery_id',
    sender: 'webhook',
    pending: `r.state = 'pending'`,
    // The first pending delivery of its (endpoint, session) goes first; a dead-lettered
    // one stops blocking the later ones.
    waitsFor: `e.webhook = r.webhook and e.session_id = r.session_id
               and e.state = 'pending' and e.sequence < r.sequence`,
    order: 'r.sequence',
  },
  a2aPushes: {
    table: 'webhook_deliveries',
    id: 'delivery_id',
    // One sender, `a2a_push`; each config's rows are ordered apart (`webhook` names it).
    sender: 'target',
    pending: `r.state = 'pending'`,
    waitsFor: `e.webhook = r.webhook and e.session_id = r.session_id
               and e.state = 'pending' and e.sequence < r.sequence`,
    order: 'r.sequence',
  },
} as const satisfies Record<string, OutboxTable>;

export type Outbox = keyof typeof outboxes;
