import type { Db, Queryable } from './db.js';
import { noFollowers, pruneInBatches, type Followers, type PruneBatch } from './pruneBatches.js';

/** Events deleted per transaction: a prune never holds locks on a large part of the journal. */
const defaultBatchSize = 5000;

/**
 * Deletes journal events older than `olderThan`, as a prefix of each session's journal
 * (everything up to the newest old event), and raises `earliest_sequence` to match, so a
 * cursor below it answers `410 resync_required`. Transcript and turns are never pruned.
 *
 * The prefix stops before any event that a follower of the session has not read yet: a
 * configured platform's thread (adapter_threads.followed_sequence: its replies are folded
 * from the journal) or a configured webhook endpoint's stream (webhook_streams: its
 * deliveries are enqueued from it). Those events are pruned once they have been read.
 *
 * One pruner at a time (pruneInBatches), in bounded batches of one session's prefix each,
 * so that every worker's periodic retention run is cheap and short.
 */
export async function pruneEvents(
  db: Db,
  options: {
    olderThan: Date;
    tenant?: string | null;
    batchSize?: number;
    followers?: Followers;
  },
): Promise<{ sessions: number; events: number; skipped: boolean }> {
  const outcome = await pruneInBatches(db, (tx) =>
    pruneEventsBatch(tx, {
      olderThan: options.olderThan,
      tenant: options.tenant ?? null,
      batchSize: options.batchSize ?? defaultBatchSize,
      followers: options.followers ?? noFollowers,
    }),
  );
  return {
    sessions: outcome.journals,
    events: outcome.removed.events ?? 0,
    skipped: outcome.skipped,
  };
}

/** One batch: the prefix of one session's journal, at most `batchSize` events. */
export async function pruneEventsBatch(
  tx: Queryable,
  options: { olderThan: Date; tenant: string | null; batchSize: number; followers: Followers },
): Promise<PruneBatch> {
  const { followers } = options;
  // The oldest-first session with an old event that every follower has read; its prefix
  // up to the newest such event.
  const cut = (
    await tx.query<{ session_id: string; upto: number; first: number }>(
      `select e.session_id, s.earliest_sequence as first,
              least((select max(n.sequence) from events n
                      where n.session_id = e.session_id and n.at < $1),
                    -- least() ignores nulls: no follower, no bound.
                    f.folded, f.enqueued) as upto
         from events e
         join sessions s on s.session_id = e.session_id
         cross join lateral (
           select (select min(a.followed_sequence) from adapter_threads a
                    where a.session_id = e.session_id and a.adapter = any($3::text[])) as folded,
                  (select min(w.followed_sequence) from webhook_streams w
                    where w.session_id = e.session_id and w.webhook = any($4::text[])) as enqueued
         ) f
        where e.at < $1 and ($2::text is null or e.tenant = $2)
          and e.sequence <= coalesce(f.folded, e.sequence)
          and e.sequence <= coalesce(f.enqueued, e.sequence)
        order by e.at
        limit 1`,
      [options.olderThan, options.tenant, followers.adapters, followers.webhooks],
    )
  ).rows[0];
  if (!cut) return { removed: { events: 0 }, done: true };
  const upto = Math.min(cut.upto, cut.first + options.batchSize - 1);
  // The session row first, as every writer does (one lock order everywhere).
  await tx.query('select 1 from sessions where session_id = $1 for update', [cut.session_id]);
  const deleted = await tx.query('delete from events where session_id = $1 and sequence <= $2', [
    cut.session_id,
    upto,
  ]);
  await tx.query(
    'update sessions set earliest_sequence = greatest(earliest_sequence, $2 + 1) where session_id = $1',
    [cut.session_id, upto],
  );
  return {
    removed: { events: deleted.rowCount },
    done: false,
    journals: upto === cut.upto ? 1 : 0,
  };
}
