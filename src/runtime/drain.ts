import { turnOutcomes } from '../metrics.js';
import { cancelBurst } from '../store/cancelBurst.js';
import type { ClaimedSession } from '../store/claimSession.js';
import { collectTurns, type SessionTurns } from '../store/collectTurns.js';
import { getSessionRow } from '../store/getSession.js';
import { parkSession } from '../store/parkSession.js';
import { releaseLease } from '../store/releaseLease.js';
import { LeaseLostError, type Lease } from '../store/types.js';
import type { Usage } from '../store/usageRows.js';
import type { RuntimeDeps } from './deps.js';
import { startHeartbeat } from './heartbeat.js';
import { answerBurst } from './turn.js';
import { watchForCancel } from './watchers.js';

/** The most turns folded into one burst; the rest wait for the next iteration. */
export const maxBurst = 50;
/**
 * Pivots allowed in a row: a user who keeps typing must not keep the agent from ever
 * answering. Past this, new input waits for the next burst.
 */
const maxPivots = 3;

/**
 * The drain loop for one claimed session (RUNTIME.md, "One iteration of the drain loop"):
 * answer the queued turns as one burst, collect again, repeat until none are left. The
 * claim brought the first burst's turns; the commit of a burst releases the lease itself
 * when nothing else is queued. `shutdown` stops it between bursts; `hardStop` (the
 * shutdown grace period ran out) and a lost lease abort the provider stream at once. A
 * cancel request is honoured before each step and aborts a running one.
 */
export async function drainSession(
  deps: RuntimeDeps,
  claimed: ClaimedSession,
  control: { shutdown: AbortSignal; hardStop: AbortSignal },
): Promise<void> {
  const lease: Lease = {
    sessionId: claimed.session_id,
    tenant: claimed.tenant,
    token: claimed.lease_token as string,
  };
  const log = deps.log.child({ session_id: lease.sessionId });
  const { runtime } = deps.config;
  const collect = () => collectTurns(deps.db, lease.sessionId, maxBurst);
  let turns: SessionTurns = claimed;
  if (claimed.claim_count > runtime.parkAfterAttempts) {
    const parked = await parkSession(deps.db, lease, {
      claims: claimed.claim_count - 1,
      queued: runtime.parkQueued,
    });
    if (parked) {
      turnOutcomes.inc({ outcome: 'parked' }, parked.turnIds.length);
      log.error(
        { claims: claimed.claim_count - 1, turn_ids: parked.turnIds, held: parked.held },
        'session parked',
      );
      return;
    }
    // Not parked: a cancel was requested, and the loop below honours it first.
    turns = await collect();
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
  let attempt = claimed.attempt;
  let partial = claimed.partial_output;
  let pivots = 0;
  let holding = true;
  /** Provider calls of a try that was cut short, billed with what closes the turn next. */
  let unbilled: Usage[] = [];
  try {
    while (!control.shutdown.aborted) {
      // A cancel requested for the running burst (possibly before a crash) comes first,
      // before later input could be folded into that burst.
      if (cancel.signal.aborted || turns.cancel_command_id !== null) {
        await cancelBurst(deps.db, lease, unbilled);
        unbilled = [];
        turnOutcomes.inc({ outcome: 'cancelled' });
        cancel.stop();
        cancel = watchForCancel(deps, lease);
        attempt = 0;
        partial = false;
        turns = await collect();
        continue;
      }
      if (turns.queued.length === 0) break;
      const outcome = await answerBurst(deps, lease, claimed.agent, turns, {
        attempt,
        partial,
        signal: abort.signal,
        cancel: cancel.signal,
        allowPivot: pivots < maxPivots,
        unbilled,
      });
      if (outcome.kind === 'waiting') {
        // The turn waits for a person; waitForInput already gave the session back.
        holding = false;
        break;
      }
      if (outcome.kind === 'finished' && !outcome.holding) {
        // The commit released the lease: nothing else was queued.
        holding = false;
        break;
      }
      if (outcome.kind === 'changed') {
        // A turn of the burst was cancelled, or another arrived, before it started.
      } else if (outcome.kind === 'pivot') {
        // New input arrived mid-generation: redo the step with it folded in.
        pivots += 1;
        attempt = outcome.attempt;
        partial = outcome.partial;
        unbilled = outcome.unbilled;
      } else if (outcome.kind === 'cancel') {
        cancel.trigger();
        unbilled = outcome.unbilled;
      } else {
        pivots = 0;
        attempt = 0;
        partial = false;
        unbilled = [];
      }
      turns = await collect();
    }
    if (holding) await releaseLease(deps.db, lease);
  } catch (error) {
    if (error instanceof LeaseLostError || abort.signal.reason instanceof LeaseLostError) {
      // A deleted session takes its lease with it: nothing to hand over, nothing wrong.
      const gone = (await getSessionRow(deps.db, lease.sessionId).catch(() => undefined)) === null;
      if (gone) log.info('session deleted; the turn stops');
      else log.warn('lease lost; abandoning the turn to its new owner');
      turnOutcomes.inc({ outcome: 'lease_lost' });
      return;
    }
    if (control.hardStop.aborted) {
      // The shutdown grace period ran out mid-step: the step is abandoned (its partial
      // output is reset by the next attempt) and the lease given back at once, so another
      // worker resumes the turn with the revision it recorded.
      const released = await releaseLease(deps.db, lease).catch(() => false);
      log.info({ released }, 'shutdown: turn handed over');
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
