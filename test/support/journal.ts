import { readEvents } from '../../src/store/readEvents.js';
import type { Queryable } from '../../src/store/db.js';

/** A journal row as the soak checker reads it: `payload` is the event as clients get it. */
export interface JournalRow {
  sequence: number;
  type: string;
  turn_id: string | null;
  payload: any;
}

/** A session's whole journal through the store's own reader (src/store/readEvents.ts). */
export async function journalOf(db: Queryable, sessionId: string): Promise<JournalRow[]> {
  const events = await readEvents(db, sessionId, 0, 1_000_000);
  return events.map((event) => ({
    sequence: event.sequence,
    type: event.type,
    turn_id: (event as { turn_id?: string }).turn_id ?? null,
    payload: event,
  }));
}
