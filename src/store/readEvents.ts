import type { Queryable } from './db.js';
import type { JournalEvent } from './types.js';

interface EventRow {
  sequence: number;
  type: string;
  turn_id: string | null;
  payload: Record<string, unknown>;
  at: Date;
}

/** Journal events strictly after `after`, in order: what every SSE reader replays. */
export async function readEvents(
  db: Queryable,
  sessionId: string,
  after: number,
  limit: number,
): Promise<JournalEvent[]> {
  const found = await db.query<EventRow>(
    `select sequence, type, turn_id, payload, at
       from events
      where session_id = $1 and sequence > $2
      order by sequence
      limit $3`,
    [sessionId, after, limit],
  );
  return found.rows.map(toJournalEvent);
}

export function toJournalEvent(row: EventRow): JournalEvent {
  const event: JournalEvent = { type: row.type, sequence: row.sequence, at: row.at.toISOString() };
  if (row.turn_id !== null) event.turn_id = row.turn_id;
  return Object.assign(event, row.payload, { type: row.type, sequence: row.sequence });
}
