import type { Config } from '../config/types.js';
import type { Logger } from '../log.js';
import { followersOf, planOf } from '../retention/plan.js';
import { prune, type PruneReport } from '../retention/prune.js';
import type { Db } from '../store/db.js';

/**
 * The worker's periodic retention run (`retention.*`, docs/retention.md): every
 * `prune_interval_ms`, and once at start, it removes what the keys say is old, across
 * tenants, in bounded batches, and logs what it removed per table. Old cursors then answer
 * 410 and clients resync from the projection. A run still going when the next is due is
 * left to finish (no second one beside it). Returns the stop function, which ends a run
 * in progress between two batches and waits for it.
 */
export function startRetention(options: {
  db: Db;
  config: Pick<Config, 'retention' | 'adapters' | 'webhooks'>;
  log: Logger;
}): () => Promise<void> {
  const { retention } = options.config;
  const followers = followersOf(options.config);
  const stopping = new AbortController();
  let running: Promise<void> | null = null;
  const run = () => {
    if (running !== null) return;
    running = prune(options.db, planOf(retention, Date.now()), {
      tenant: null,
      batchSize: retention.pruneBatchSize,
      followers,
      signal: stopping.signal,
    })
      .then((report) => {
        const removed = removedTables(report);
        if (Object.keys(removed).length > 0) {
          options.log.info({ removed, batches: report.batches }, 'retention removed old rows');
        }
      })
      .catch((error: unknown) => {
        if (!stopping.signal.aborted) {
          options.log.error({ err: (error as Error).message }, 'pruning failed');
        }
      })
      .finally(() => {
        running = null;
      });
  };
  const timer = setInterval(run, retention.pruneIntervalMs);
  timer.unref();
  run();
  return async () => {
    clearInterval(timer);
    stopping.abort();
    await running;
  };
}

function removedTables(report: PruneReport): Record<string, number> {
  return Object.fromEntries(Object.entries(report.removed).filter(([, count]) => count > 0));
}
