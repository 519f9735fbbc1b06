import type { ParleyEvent } from '../protocol/events.js';
import type { Queryable } from './db.js';
import { eventRowColumns, eventRowsFrom, toWireEvent, type EventRow } from './eventRows.js';

/** Journal events strictly after `after`, in order, as clients receive them. */
export async function readEvents(
  db: Queryable,
  sessionId: string,
  after: number,
  limit: number,
): Promise<ParleyEvent[]> {
  const found = await db.query<EventRow>(
    {
      name: 'read_events',
      text: `select ${eventRowColumns}
               from ${eventRowsFrom}
              where e.session_id = $1 and e.sequence > $2
              order by e.sequence
              limit $3`,
    },
    [sessionId, after, limit],
  );
  return found.rows.map(toWireEvent);
}
