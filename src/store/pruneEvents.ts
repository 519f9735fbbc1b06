import type { Db } from './db.js';

/** Any fixed number: every Parley process that prunes takes the same advisory lock. */
const pruneLock = 7_301_978;
/** Events deleted per transaction: a prune never holds locks on a large part of the journal. */
const defaultBatchSize = 5000;

/**
 * Deletes journal events older than `olderThan`, as a prefix of each session's journal
 * (everything up to the newest old event), and raises `earliest_sequence` to match, so a
 * cursor below it answers `410 resync_required`. Transcript and turns are never pruned.
 *
 * One pruner at a time (a transaction-level advisory lock per batch: a second pruner finds
 * it taken and stops, leaving the work to the first), in bounded batches of one session's
 * prefix each, so that every worker's periodic retention run is cheap and short.
 */
export async function pruneEvents(
  db: Db,
  options: { olderThan: Date; tenant?: string | null; batchSize?: number },
): Promise<{ sessions: number; events: number; skipped: boolean }> {
  const batchSize = options.batchSize ?? defaultBatchSize;
  let sessions = 0;
  let events = 0;
  for (;;) {
    const batch = await db.transaction(async (tx) => {
      const lock = await tx.query<{ locked: boolean }>(
        'select pg_try_advisory_xact_lock($1) as locked',
        [pruneLock],
      );
      if (!lock.rows[0]?.locked) return null;
      // The oldest-first session with old events; its prefix up to the newest old event.
      const cut = (
        await tx.query<{ session_id: string; upto: number; first: number }>(
          `select e.session_id, s.earliest_sequence as first,
                  (select max(o.sequence) from events o
                    where o.session_id = e.session_id and o.at < $1) as upto
             from events e join sessions s on s.session_id = e.session_id
            where e.at < $1 and ($2::text is null or e.tenant = $2)
            order by e.at
            limit 1`,
          [options.olderThan, options.tenant ?? null],
        )
      ).rows[0];
      if (!cut) return { events: 0, done: true };
      const upto = Math.min(cut.upto, cut.first + batchSize - 1);
      // The session row first, as every writer does (one lock order everywhere).
      await tx.query('select 1 from sessions where session_id = $1 for update', [cut.session_id]);
      const deleted = await tx.query(
        'delete from events where session_id = $1 and sequence <= $2',
        [cut.session_id, upto],
      );
      await tx.query(
        'update sessions set earliest_sequence = greatest(earliest_sequence, $2 + 1) where session_id = $1',
        [cut.session_id, upto],
      );
      return { events: deleted.rowCount, done: false, finished: upto === cut.upto };
    });
    if (batch === null) return { sessions, events, skipped: true };
    if (batch.done) return { sessions, events, skipped: false };
    events += batch.events;
    if (batch.finished) sessions += 1;
  }
}
