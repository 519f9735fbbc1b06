import { turnOutcomes } from '../metrics.js';
import { readCancelRequest } from '../store/cancelRequest.js';
import { collectInputs } from '../store/collectInputs.js';
import { cancelBurst } from '../store/finishTurn.js';
import { parkSession } from '../store/parkSession.js';
import { releaseLease } from '../store/releaseLease.js';
import {
  BurstChangedError,
  CancelRequestedError,
  LeaseLostError,
  type Lease,
  type SessionRow,
} from '../store/types.js';
import { answerBurst } from './burst.js';
import type { RuntimeDeps } from './deps.js';
import { startHeartbeat } from './heartbeat.js';
import { watchForCancel } from './watchers.js';

/** The most inputs folded into one burst; the rest wait for the next iteration. */
const maxBurst = 50;
/**
 * Pivots allowed in a row: a user who keeps typing must not keep the agent from ever
 * answering. Past this, new input waits for the next burst.
 */
const maxPivots = 3;

/**
 * The drain loop for one claimed session (RUNTIME.md, "One iteration of the drain loop"):
 * collect the pending inputs, answer them as one burst, repeat until none are left, then
 * release the lease. `shutdown` stops it between bursts; `hardStop` (the shutdown grace
 * period ran out) and a lost lease abort the provider stream at once. A cancel request
 * is honoured before each step and aborts a running one.
 */
export async function drainSession(
  deps: RuntimeDeps,
  session: SessionRow,
  control: { shutdown: AbortSignal; hardStop: AbortSignal },
): Promise<void> {
  const lease: Lease = {
    sessionId: session.session_id,
    tenant: session.tenant,
    token: session.lease_token as string,
  };
  const log = deps.log.child({ session_id: lease.sessionId });
  const { runtime } = deps.config;
  if (session.claim_count > runtime.parkAfterAttempts) {
    const parked = await parkSession(deps.db, lease, { claims: session.claim_count - 1 });
    turnOutcomes.inc({ outcome: 'parked' }, parked.turnIds.length);
    log.error({ claims: session.claim_count - 1, turn_ids: parked.turnIds }, 'session parked');
    return;
  }
  const abort = new AbortController();
  const onHardStop = () => abort.abort(new Error('shutdown grace period over'));
  control.hardStop.addEventListener('abort', onHardStop, { once: true });
  let cancel = watchForCancel(deps, lease);
  const heartbeat = startHeartbeat({
    db: deps.db,
    lease,
    heartbeatMs: runtime.heartbeatMs,
    ttlMs: runtime.leaseTtlMs,
    log,
    onLost: (error) => abort.abort(error),
    onCancelRequested: () => cancel.trigger(),
  });
  let partial = session.partial_output;
  let attempt = session.attempt;
  let pivots = 0;
  let released = false;
  try {
    while (!control.shutdown.aborted) {
      // A cancel requested for the running burst (possibly before a crash) comes first,
      // before later input could be folded into that burst.
      if (cancel.signal.aborted || (await readCancelRequest(deps.db, lease.sessionId)) !== null) {
        await cancelBurst(deps.db, lease, []);
        turnOutcomes.inc({ outcome: 'cancelled' });
        cancel.stop();
        cancel = watchForCancel(deps, lease);
        attempt = 0;
        partial = false;
        continue;
      }
      const inputs = await collectInputs(deps.db, lease.sessionId, maxBurst);
      if (inputs.length === 0) break;
      let outcome;
      try {
        outcome = await answerBurst(deps, lease, session.agent, inputs, {
          attempt,
          partial,
          signal: abort.signal,
          cancel: cancel.signal,
          allowPivot: pivots < maxPivots,
        });
      } catch (error) {
        if (error instanceof BurstChangedError) continue;
        if (error instanceof CancelRequestedError) {
          cancel.trigger();
          continue;
        }
        throw error;
      }
      if (outcome.kind === 'pivot') {
        // New input arrived mid-generation: redo the step with it folded in.
        pivots += 1;
        attempt = outcome.attempt;
        partial = outcome.partial;
        continue;
      }
      if (outcome.kind === 'waiting') {
        // The turn waits for a person; waitForInput already gave the session back.
        released = true;
        break;
      }
      if (outcome.kind === 'cancel') {
        cancel.trigger();
        continue;
      }
      pivots = 0;
      attempt = 0;
      partial = false;
    }
    if (!released) await releaseLease(deps.db, lease);
  } catch (error) {
    if (error instanceof LeaseLostError || abort.signal.reason instanceof LeaseLostError) {
      log.warn('lease lost; abandoning the turn to its new owner');
      turnOutcomes.inc({ outcome: 'lease_lost' });
      return;
    }
    log.error({ err: describeError(error) }, 'turn failed unexpectedly; releasing the lease');
    await releaseLease(deps.db, lease).catch(() => {});
  } finally {
    heartbeat.stop();
    cancel.stop();
    control.hardStop.removeEventListener('abort', onHardStop);
  }
}

function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
