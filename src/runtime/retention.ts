import type { Logger } from '../log.js';
import type { Db } from '../store/db.js';
import { pruneEvents } from '../store/pruneEvents.js';

/**
 * `retention.keep_events_days`: prunes old journal events periodically. Old cursors then
 * answer 410 and clients resync from the projection. Returns the stop function.
 */
export function startRetention(options: {
  db: Db;
  keepEventsDays: number | null;
  intervalMs: number;
  log: Logger;
}): () => void {
  if (options.keepEventsDays === null) return () => {};
  const keepMs = options.keepEventsDays * 24 * 60 * 60 * 1000;
  const run = () => {
    pruneEvents(options.db, { olderThan: new Date(Date.now() - keepMs) })
      .then((pruned) => {
        if (pruned.events > 0) options.log.info(pruned, 'pruned old journal events');
      })
      .catch((error: unknown) =>
        options.log.error({ err: (error as Error).message }, 'pruning failed'),
      );
  };
  const timer = setInterval(run, options.intervalMs);
  timer.unref();
  run();
  return () => clearInterval(timer);
}
