import type { ParleyEvent } from '../protocol/events.js';
import type { Db } from './db.js';
import { eventRowColumns, eventRowsFrom, toWireEvent, type EventRow } from './eventRows.js';

/** A task's journal as a push config follows it (the A2A view turns it into notifications). */
export interface A2aPushStory {
  taskId: string;
  sessionId: string;
  /** The session's events of the `types` asked for, from the task's start to the journal's end. */
  events: ParleyEvent[];
  /** Events up to here are summed up in one notification, the status as it then stood. */
  createdSequence: number;
  /** Events up to here have been turned into notifications (null: none yet). */
  followedSequence: number | null;
}

/** One notification: the event it follows from (its place in order) and the body sent. */
export interface A2aPushNotification {
  sequence: number;
  eventType: string;
  payload: unknown;
}

export interface A2aPushComposer {
  /** The journal event types that can change a task's notifications. */
  types: readonly string[];
  /** The story's new notifications, and whether the task has ended (nothing more will come). */
  compose(story: A2aPushStory): { notifications: A2aPushNotification[]; finished: boolean };
}

/**
 * Enqueues a push config's new notifications as webhook deliveries (target `a2a_push`),
 * in one transaction that advances the config's position: each is enqueued exactly once,
 * and one whose event is committed is delivered even if the process died right after.
 * The delivery keeps the body as sent (the same bytes on every retry). The session row
 * is taken first (the one lock order), the config skipped while another process follows it.
 */
export async function enqueueA2aPushes(
  db: Db,
  pushId: string,
  input: { composer: A2aPushComposer; newId: () => string },
): Promise<{ enqueued: number }> {
  return db.transaction(async (tx) => {
    const session = (
      await tx.query<{ session_id: string; tenant: string; last_sequence: number }>(
        `select s.session_id, s.tenant, s.last_sequence
           from sessions s join a2a_push_configs p on p.session_id = s.session_id
          where p.push_id = $1
            for key share of s`,
        [pushId],
      )
    ).rows[0];
    if (!session) return { enqueued: 0 };
    const config = (
      await tx.query<{
        task_id: string;
        from_sequence: number;
        created_sequence: number;
        followed_sequence: number | null;
      }>(
        `select task_id, from_sequence, created_sequence, followed_sequence
           from a2a_push_configs where push_id = $1 and not finished
            for update skip locked`,
        [pushId],
      )
    ).rows[0];
    if (!config) return { enqueued: 0 };
    const rows = await tx.query<EventRow>(
      `select ${eventRowColumns}
         from ${eventRowsFrom}
        where e.session_id = $1 and e.sequence > $2 and e.sequence <= $3
          and e.type = any($4::text[])
        order by e.sequence`,
      [session.session_id, config.from_sequence, session.last_sequence, input.composer.types],
    );
    const { notifications, finished } = input.composer.compose({
      taskId: config.task_id,
      sessionId: session.session_id,
      events: rows.rows.map(toWireEvent),
      createdSequence: config.created_sequence,
      followedSequence: config.followed_sequence,
    });
    if (notifications.length > 0) {
      await tx.query(
        `insert into webhook_deliveries (delivery_id, webhook, tenant, session_id, sequence,
                                         event_type, payload, target, push_id)
         select r.delivery_id, 'a2a_push:' || $1, $2, $3, r.sequence, r.event_type, r.payload,
                'a2a_push', $1
           from jsonb_to_recordset($4::jsonb)
                as r(delivery_id text, sequence bigint, event_type text, payload jsonb)
         on conflict (webhook, session_id, sequence) do nothing`,
        [
          pushId,
          session.tenant,
          session.session_id,
          JSON.stringify(
            notifications.map((notification) => ({
              delivery_id: input.newId(),
              sequence: notification.sequence,
              event_type: notification.eventType,
              payload: notification.payload,
            })),
          ),
        ],
      );
    }
    await tx.query(
      `update a2a_push_configs set followed_sequence = $2, finished = $3 where push_id = $1`,
      [pushId, session.last_sequence, finished],
    );
    return { enqueued: notifications.length };
  });
}
