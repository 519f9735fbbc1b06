import type { ParleyEvent } from '../protocol/events.js';
import type { Db } from './db.js';
import { readEvents } from './readEvents.js';

export interface WebhookFollow {
  webhook: string;
  /** The journal event types this endpoint receives. */
  types: readonly string[];
  newId: () => string;
}

const batch = 500;

/**
 * Enqueues a session's new journal events for one endpoint, in one transaction that
 * advances the endpoint's cursor on that session: each event is enqueued exactly once,
 * and an event committed to the journal is delivered even if the process died right
 * after. The delivery keeps the event as sent (the same bytes on every retry, whatever
 * retention does to the journal). Only an endpoint registered for the session's tenant
 * (or for every tenant) gets anything; a stream seen for the first time starts after the
 * events journaled before the endpoint first belonged to that tenant.
 */
export async function enqueueWebhookEvents(
  db: Db,
  sessionId: string,
  follow: WebhookFollow,
): Promise<{ enqueued: number; more: boolean }> {
  return db.transaction(async (tx) => {
    const session = (
      await tx.query<{ tenant: string; agent: string; registered_at: Date | null }>(
        // The session row first (the one lock order): a deletion is waited for, not deadlocked.
        `select s.tenant, s.agent,
                (select min(e.registered_at) from webhook_endpoints e
                  where e.webhook = $2 and e.tenant in (s.tenant, '*')) as registered_at
           from sessions s where s.session_id = $1
            for key share of s`,
        [sessionId, follow.webhook],
      )
    ).rows[0];
    if (!session || session.registered_at === null) return { enqueued: 0, more: false };
    await tx.query(
      `insert into webhook_streams (webhook, session_id, tenant, followed_sequence)
       select $1, $2, $3, coalesce(max(sequence), 0) from events
        where session_id = $2 and at < $4
       on conflict (webhook, session_id) do nothing`,
      [follow.webhook, sessionId, session.tenant, session.registered_at],
    );
    const stream = (
      await tx.query<{ followed_sequence: number }>(
        `select followed_sequence from webhook_streams
          where webhook = $1 and session_id = $2 for update skip locked`,
        [follow.webhook, sessionId],
      )
    ).rows[0];
    if (!stream) return { enqueued: 0, more: false };
    const events = await readEvents(tx, sessionId, stream.followed_sequence, batch);
    if (events.length === 0) return { enqueued: 0, more: false };
    const selected = events.filter((event) => follow.types.includes(event.type));
    if (selected.length > 0) {
      const rows = selected.map((event) => ({
        delivery_id: follow.newId(),
        sequence: event.sequence,
        event_type: event.type,
        payload: {
          type: event.type,
          timestamp: event.at,
          data: { tenant: session.tenant, session_id: sessionId, agent: session.agent, event },
        },
      }));
      await tx.query(
        `insert into webhook_deliveries (delivery_id, webhook, tenant, session_id, sequence,
                                         event_type, payload)
         select r.delivery_id, $1, $2, $3, r.sequence, r.event_type, r.payload
           from jsonb_to_recordset($4::jsonb)
                as r(delivery_id text, sequence bigint, event_type text, payload jsonb)
         on conflict (webhook, session_id, sequence) do nothing`,
        [follow.webhook, session.tenant, sessionId, JSON.stringify(rows)],
      );
    }
    const last = (events[events.length - 1] as ParleyEvent).sequence;
    await tx.query(
      'update webhook_streams set followed_sequence = $3 where webhook = $1 and session_id = $2',
      [follow.webhook, sessionId, last],
    );
    return { enqueued: selected.length, more: events.length === batch };
  });
}
