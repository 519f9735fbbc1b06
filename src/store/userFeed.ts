import type { ParleyEvent } from '../protocol/events.js';
import type { Queryable } from './db.js';
import { eventRowColumns, toWireEvent, transcriptJoin, type EventRow } from './eventRows.js';
import { viewerParams, visibleSql, type Viewer } from './visibility.js';
import { activeSql } from './activity.js';

/**
 * The journal events a person's screens follow across sessions (the user stream, `GET
 * /api/v1/me/events`): what changes a session list, an inbox, an execution or a panel.
 * Not the reply's text as it streams, tool calls or usage: those are a conversation's own.
 */
export const userFeedTypes = [
  'message',
  'turn_started',
  'done',
  'cancelled',
  'error',
  'stalled',
  'input_required',
  'input_resolved',
  'input_escalated',
  'execution_status',
  'state_changed',
  'panel',
  'forked',
  'rewound',
] as const;

/** The oldest cursor a reconnect may resume from; older ones get a `resync` frame. */
export const userFeedReplayMs = 60 * 60 * 1000;

export interface UserFeedItem {
  session_id: string;
  /** When the event was journaled (its transaction's time). */
  at: Date;
  event: ParleyEvent;
}

/**
 * The events of `userFeedTypes` journaled since `since` in the sessions of the tenant the
 * viewer may see, oldest first, and the database's time of the read. Every statement that
 * journals events sets its session's `updated_at` to the same transaction time as the
 * events' `at`, so the sessions index narrows the read to the sessions that changed.
 * A transaction that began before `since` and committed after the read is missed here:
 * the read's time (`readAt`) is never later than the start of a transaction still open,
 * and the caller reads again from before it (`server.user_stream_overlap_ms` earlier).
 */
export async function readUserFeed(
  db: Queryable,
  tenant: string,
  viewer: Viewer,
  since: Date,
  limit: number,
  /** The last item of the page before (a catch-up's next page): only items after it. */
  after: UserFeedItem | null = null,
): Promise<{ items: UserFeedItem[]; readAt: Date }> {
  const found = await db.query<EventRow & { session_id: string; at: Date; read_at: Date }>(
    {
      name: 'read_user_feed',
      text: `select e.session_id, e.at, ${readAtSql} as read_at, ${eventRowColumns}
               from sessions s
               join events e on e.session_id = s.session_id
               ${transcriptJoin}
              where s.tenant = $1 and ${activeSql('s', '>=', '$2::timestamptz')} and ${visibleSql('s', 3)}
                and e.at >= $2 and e.type = any($7::text[])
                and ($9::timestamptz is null or (e.at, e.session_id, e.sequence) > ($9, $10, $11))
              order by e.at, e.session_id, e.sequence
              limit $8`,
    },
    [
      tenant,
      since,
      ...viewerParams(viewer),
      userFeedTypes,
      limit,
      after?.at ?? null,
      after?.session_id ?? null,
      after?.event.sequence ?? null,
    ],
  );
  const readAt = found.rows[0]?.read_at ?? (await databaseNow(db));
  return {
    items: found.rows.map((row) => ({
      session_id: row.session_id,
      at: row.at,
      event: toWireEvent(row),
    })),
    readAt,
  };
}

async function databaseNow(db: Queryable): Promise<Date> {
  const found = await db.query<{ now: Date }>(`select ${readAtSql} as now`);
  return (found.rows[0] as { now: Date }).now;
}

/**
 * The time a read may count as read up to: now, or the start of the oldest transaction
 * still open on this database, if earlier. Its events carry that start as `at` and
 * become visible only when it commits, maybe long after a read at `now()` moved past it
 * (a worker paused mid-transaction): the next read must still look back that far.
 * Transactions of other roles show no start here; Parley's own connections share one.
 */
const readAtSql = `least(now(), (select min(a.xact_start) from pg_stat_activity a
                    where a.datname = current_database() and a.pid <> pg_backend_pid()
                      and a.backend_type = 'client backend' and a.xact_start is not null))`;
