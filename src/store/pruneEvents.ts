import type { Db } from './db.js';

/**
 * Deletes journal events older than `olderThan`, as a prefix of each session's journal
 * (everything up to the newest old event), and raises `earliest_sequence` to match, so a
 * cursor below it answers `410 resync_required`. Transcript and turns are never pruned.
 */
export async function pruneEvents(
  db: Db,
  options: { olderThan: Date; tenant?: string | null },
): Promise<{ sessions: number; events: number }> {
  return db.transaction(async (tx) => {
    const cut = await tx.query<{ session_id: string; upto: number }>(
      `select session_id, max(sequence) as upto
         from events
        where at < $1 and ($2::text is null or tenant = $2)
        group by session_id`,
      [options.olderThan, options.tenant ?? null],
    );
    let events = 0;
    for (const { session_id: sessionId, upto } of cut.rows) {
      const deleted = await tx.query(
        'delete from events where session_id = $1 and sequence <= $2',
        [sessionId, upto],
      );
      events += deleted.rowCount;
      await tx.query(
        'update sessions set earliest_sequence = greatest(earliest_sequence, $2 + 1) where session_id = $1',
        [sessionId, upto],
      );
    }
    return { sessions: cut.rows.length, events };
  });
}
