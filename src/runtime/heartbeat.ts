import type { Db } from '../store/db.js';
import { renewLease } from '../store/renewLease.js';
import { LeaseLostError, type Lease } from '../store/types.js';
import type { Logger } from '../log.js';
import { startLeaseHeartbeat } from '../work/heartbeat.js';

/**
 * The session lease's heartbeat: the engine's (`startLeaseHeartbeat`, every ttl/3 by
 * default; lost when the token is gone or no renewal succeeded for a whole ttl), renewing
 * with `renewLease`, which also reports a pending cancel of the running burst (its
 * wake-up may have been lost). `onLost` aborts the turn.
 */
export function startHeartbeat(options: {
  db: Db;
  lease: Lease;
  heartbeatMs: number;
  ttlMs: number;
  log: Logger;
  onLost: (error: LeaseLostError) => void;
  onCancelRequested?: () => void;
}): { stop: () => void } {
  let lost: LeaseLostError | null = null;
  return startLeaseHeartbeat({
    everyMs: options.heartbeatMs,
    ttlMs: options.ttlMs,
    renew: async () => {
      try {
        const renewed = await renewLease(options.db, options.lease, options.ttlMs);
        if (renewed.cancelRequested) options.onCancelRequested?.();
        return true;
      } catch (error) {
        if (!(error instanceof LeaseLostError)) throw error;
        lost = error;
        return false;
      }
    },
    onLost: () => options.onLost(lost ?? new LeaseLostError(options.lease.sessionId)),
    onError: (error) =>
      options.log.warn(
        {
          session_id: options.lease.sessionId,
          err: error instanceof Error ? error.message : String(error),
        },
        'heartbeat failed; retrying',
      ),
  });
}
