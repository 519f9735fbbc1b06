import type { Db, Queryable } from './db.js';

/** Any fixed number: every Parley process that prunes takes the same advisory lock. */
const pruneLock = 7_301_978;

/** Rows one retention batch removed, by table. */
export type Removed = Record<string, number>;

export interface PruneBatch {
  removed: Removed;
  /** Nothing (more) to remove for this rule now. */
  done: boolean;
  /** Sessions whose journal this batch finished cutting back (events only). */
  journals?: number;
}

export interface PruneOutcome {
  removed: Removed;
  /** Batches that removed something. */
  batches: number;
  journals: number;
  /** Another pruner held the lock: this one stopped and left the work to it. */
  skipped: boolean;
}

/**
 * Runs one retention rule in bounded batches, each its own short transaction: first the
 * pruning lock (transaction-level, so it is never held between batches; a pruner that
 * finds it taken stops), then the rule's one statement for at most one batch. No batch
 * holds locks on a large part of a table, and a worker's periodic run stays short.
 */
export async function pruneInBatches(
  db: Db,
  batch: (tx: Queryable) => Promise<PruneBatch>,
  signal?: AbortSignal,
): Promise<PruneOutcome> {
  const removed: Removed = {};
  let batches = 0;
  let journals = 0;
  for (;;) {
    // Stopping (shutdown) ends the run between batches: each batch commits whole or not.
    signal?.throwIfAborted();
    const outcome = await db.transaction(async (tx) => {
      const lock = await tx.query<{ locked: boolean }>(
        'select pg_try_advisory_xact_lock($1) as locked',
        [pruneLock],
      );
      return lock.rows[0]?.locked ? batch(tx) : null;
    });
    if (outcome === null) return { removed, batches, journals, skipped: true };
    journals += outcome.journals ?? 0;
    if (Object.values(outcome.removed).some((count) => count > 0)) batches += 1;
    for (const [table, count] of Object.entries(outcome.removed)) {
      removed[table] = (removed[table] ?? 0) + count;
    }
    if (outcome.done) return { removed, batches, journals, skipped: false };
  }
}

/** Which sessions' followers to respect: the configured platforms and webhook endpoints. */
export interface Followers {
  adapters: readonly string[];
  webhooks: readonly string[];
}

export const noFollowers: Followers = { adapters: [], webhooks: [] };
