import type { Db, Queryable } from './db.js';
import { noFollowers, pruneInBatches, type Followers, type PruneBatch } from './pruneBatches.js';
import { tenantsSql } from './tenantSweep.js';

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
  // The session whose journal is the oldest (`journal_since`, a lower bound of its oldest
  // event's time, through sessions_by_journal_age tenant by tenant) among those whose
  // first event every follower has read.
  const cut = (
    await tx.query<{
      session_id: string;
      first: number;
      folded: number | null;
      enqueued: number | null;
    }>(
      `with recursive ${tenantsSql(options.tenant === null ? null : '$2')}
       select c.session_id, c.first, c.folded, c.enqueued
         from tenants t
         cross join lateral (
           select s.session_id, s.earliest_sequence as first, s.journal_since, f.folded, f.enqueued
             from sessions s
             cross join lateral (
               select (select min(a.followed_sequence) from adapter_threads a
                        where a.session_id = s.session_id and a.adapter = any($3::text[])) as folded,
                      (select min(w.followed_sequence) from webhook_streams w
                        where w.session_id = s.session_id and w.webhook = any($4::text[])) as enqueued
             ) f
            where s.tenant = t.tenant and ($2::text is null or s.tenant = $2)
              and s.journal_since < $1
              and s.earliest_sequence <= coalesce(f.folded, s.earliest_sequence)
              and s.earliest_sequence <= coalesce(f.enqueued, s.earliest_sequence)
            order by s.journal_since
            limit 1) c
        where t.tenant is not null
        order by c.journal_since
        limit 1`,
      [options.olderThan, options.tenant, followers.adapters, followers.webhooks],
    )
  ).rows[0];
  if (!cut) return { removed: { events: 0 }, done: true };
  // The session row first, as every writer does (one lock order everywhere).
  await tx.query('select 1 from sessions where session_id = $1 for update', [cut.session_id]);
  // Up to its newest old event (a prefix: an event's time follows its sequence to within
  // the length of a transaction), no further than a follower has read nor than a batch.
  const found = await tx.query<{ whole: number | string | null }>(
    `select case when max(sequence) is not null
                 then least(max(sequence), $3::bigint, $4::bigint) end as whole
       from events where session_id = $1 and at < $2`,
    [cut.session_id, options.olderThan, cut.folded, cut.enqueued],
  );
  const whole = found.rows[0]?.whole == null ? null : Number(found.rows[0].whole);
  const upto = whole === null ? null : Math.min(whole, Number(cut.first) + options.batchSize - 1);
  const deleted =
    upto === null
      ? { rowCount: 0 }
      : await tx.query('delete from events where session_id = $1 and sequence <= $2', [
          cut.session_id,
          upto,
        ]);
  // The session's new bound: its oldest remaining event's time, or now when none remain
  // (anything journaled later is newer). A session without an old event is not read again.
  await tx.query(
    `update sessions
        set earliest_sequence = greatest(earliest_sequence, coalesce($2::bigint, 0) + 1),
            journal_since = coalesce((select e.at from events e
                                       where e.session_id = $1 and e.sequence > coalesce($2::bigint, 0)
                                       order by e.sequence limit 1), now())
      where session_id = $1`,
    [cut.session_id, upto],
  );
  return {
    removed: { events: deleted.rowCount },
    done: false,
    journals: upto !== null && upto === whole ? 1 : 0,
  };
}
