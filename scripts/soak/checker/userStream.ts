import type { Db } from '../../../src/store/db.js';
import { userFeedTypes } from '../../../src/store/userFeed.js';
import type { UserStreamRecord } from '../userStream.js';
import type { Findings } from './findings.js';

/** A journal event of the user stream's types, as the checker reads it. */
export interface FeedEventRow {
  session_id: string;
  sequence: number;
  type: string;
  /** Journaled at or after the follower's first cursor: the stream owes it. */
  owed: boolean;
}

export interface UserStreamFigures {
  received: number;
  owed: number;
  connections: number;
}

/** How far before its cursor a stream may send (it reads back `user_stream_overlap_ms`). */
const lookBackMs = 60_000;

/**
 * The events of the user stream's types in the soak principal's tenant (the dev
 * principal, an admin, sees every session of it) journaled since a minute before the
 * follower's first cursor.
 */
export async function readFeedEvents(
  db: Db,
  tenant: string,
  fromMs: number,
): Promise<FeedEventRow[]> {
  const found = await db.query<FeedEventRow>(
    `select e.session_id, e.sequence::int as sequence, e.type,
            e.at >= to_timestamp($3::double precision / 1000) as owed
       from events e
       join sessions s on s.session_id = e.session_id
      where s.tenant = $1 and e.type = any($2::text[])
        and e.at >= to_timestamp(($3::double precision - $4) / 1000)`,
    [tenant, [...userFeedTypes], fromMs, lookBackMs],
  );
  return found.rows;
}

/**
 * The user stream (docs/PROTOCOL.md, "The user stream") against the journal:
 * - `user stream delivered` (lost): every event of its types journaled since the
 *   follower's first cursor reached it, on some connection;
 * - `user stream names journal events` (mismatch): everything it received is a journal
 *   event of that session, sequence and type;
 * - `user stream once per connection` (doubled): no event came twice on one connection.
 */
export function checkUserStream(
  events: FeedEventRow[],
  record: UserStreamRecord,
  findings: Findings,
): UserStreamFigures {
  const journal = new Map(events.map((row) => [`${row.session_id} ${row.sequence}`, row]));
  let owed = 0;
  for (const [key, row] of journal) {
    if (!row.owed) continue;
    owed += 1;
    if (!record.received.has(key)) {
      findings.add('lost', 'user stream delivered', `session ${key} ${row.type}: never received`);
    }
  }
  for (const [key, type] of record.received) {
    const row = journal.get(key);
    if (!row || row.type !== type) {
      findings.add(
        'mismatch',
        'user stream names journal events',
        `session ${key} ${type}: the journal has ${row?.type ?? 'nothing'} there`,
      );
    }
  }
  for (const key of record.twiceOnOneConnection) {
    findings.add('doubled', 'user stream once per connection', `session ${key}`);
  }
  return { received: record.received.size, owed, connections: record.connections };
}
