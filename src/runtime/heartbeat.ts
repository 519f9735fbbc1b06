import type { Db } from '../store/db.js';
import { renewLease } from '../store/renewLease.js';
import { LeaseLostError, type Lease } from '../store/types.js';
import type { Logger } from '../log.js';

/**
 * Extends the lease every `heartbeatMs` (ttl/3 by default). If the token is gone, or the
 * database could not be reached for longer than the ttl (someone else may own the session
 * by now), the worker must stop writing: `onLost` aborts the turn.
 */
export function startHeartbeat(options: {
  db: Db;
  lease: Lease;
  heartbeatMs: number;
  ttlMs: number;
  log: Logger;
  onLost: (error: LeaseLostError) => void;
  /** A cancel of the running burst is pending (the wake-up may have been lost). */
  onCancelRequested?: () => void;
}): { stop: () => void } {
  let lastRenewed = Date.now();
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    renewLease(options.db, options.lease, options.ttlMs)
      .then((renewed) => {
        lastRenewed = Date.now();
        if (renewed.cancelRequested) options.onCancelRequested?.();
      })
      .catch((error: unknown) => {
        if (error instanceof LeaseLostError) {
          clearInterval(timer);
          options.onLost(error);
        } else if (Date.now() - lastRenewed >= options.ttlMs) {
          clearInterval(timer);
          options.onLost(new LeaseLostError(options.lease.sessionId));
        } else {
          options.log.warn(
            { session_id: options.lease.sessionId, err: describe(error) },
            'heartbeat failed; retrying',
          );
        }
      })
      .finally(() => {
        running = false;
      });
  }, options.heartbeatMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
