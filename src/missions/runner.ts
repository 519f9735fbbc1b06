import { newLeaseToken } from '../ids.js';
import {
  claimExecutions,
  ExecutionLeaseLostError,
  type ClaimedExecution,
  type ExecutionLease,
} from '../store/claimExecutions.js';
import { msUntilNextExecution } from '../store/msUntilNextExecution.js';
import { releaseExecution } from '../store/releaseExecution.js';
import { renewExecutionLease } from '../store/renewExecutionLease.js';
import { wakeExecution } from '../store/wakeExecution.js';
import type { Wakeup } from '../store/wakeups.js';
import { ClaimLoop, claimLoopOptions, type ClaimKind } from '../work/claimLoop.js';
import { startLeaseHeartbeat } from '../work/heartbeat.js';
import { advanceExecution } from './advance.js';
import type { ExecutionDeps } from './deps.js';
import { executionOfTurn } from './iteration.js';

/** Journal events after which an execution has something to look at. */
const wakingTypes = new Set(['done', 'error', 'cancelled', 'input_required', 'input_resolved']);

/**
 * Executions as a kind of the engine's leased work (src/work/claimLoop.ts): the worker
 * role's second loop, beside the claim loop of sessions. A claim takes due executions
 * (their `next_run_at` come: a dispatch, a delay's end, a re-check) up to
 * max_parallel_executions; the handler runs one step under the lease with a heartbeat. An
 * idle loop sleeps until the earliest timer.
 *
 * Wake-ups: a dispatch, cancel or unblock (`execution`), and a terminal event of an
 * execution's turn in any session (`events` carrying a turn `exec.ID.N`): that execution's
 * timer is advanced to now, so it does not wait for its re-check.
 */
export function executionKind(deps: ExecutionDeps): ClaimKind<ClaimedExecution> {
  const { runtime } = deps.config;
  return {
    name: 'executions',
    capacity: runtime.maxParallelExecutions,
    claim: (limit) =>
      claimExecutions(deps.db, {
        token: newLeaseToken(),
        owner: deps.owner,
        ttlMs: runtime.leaseTtlMs,
        limit,
      }),
    nextDueMs: () => msUntilNextExecution(deps.db),
    onWakeup: (wakeup, wake) => onWakeup(deps, wakeup, wake),
    handle: (execution, control) => step(deps, execution, control.hardStop),
    describe: (execution) => ({ execution_id: execution.execution_id }),
  };
}

/** The worker role's claim loop of executions (see `ClaimLoop` for its states). */
export class ExecutionRunner extends ClaimLoop<ClaimedExecution> {
  constructor(deps: ExecutionDeps) {
    super(executionKind(deps), claimLoopOptions(deps));
  }

  get activeExecutions(): number {
    return this.size;
  }
}

function onWakeup(deps: ExecutionDeps, wakeup: Wakeup, wake: () => void): void {
  if (wakeup.kind === 'execution') {
    wake();
    return;
  }
  if (wakeup.kind !== 'events' && wakeup.kind !== 'input') return;
  const ids = new Set<string>();
  for (const event of wakeup.events() ?? []) {
    if (!wakingTypes.has(event.type)) continue;
    const turnIds = 'turn_ids' in event ? event.turn_ids : [event.turn_id];
    for (const turnId of turnIds) {
      const executionId = executionOfTurn(turnId);
      if (executionId !== null) ids.add(executionId);
    }
  }
  for (const executionId of ids) {
    wakeExecution(deps.db, { sessionId: wakeup.sessionId, executionId }).then(
      (woken) => {
        if (woken) wake();
      },
      (error: unknown) =>
        deps.log.warn({ err: (error as Error).message }, 'waking an execution failed'),
    );
  }
}

/** One execution's step, with a heartbeat on its lease; never throws. */
async function step(
  deps: ExecutionDeps,
  execution: ClaimedExecution,
  hardStop: AbortSignal,
): Promise<void> {
  const { runtime } = deps.config;
  const lease: ExecutionLease = {
    tenant: execution.tenant,
    executionId: execution.execution_id,
    token: execution.lease_token as string,
  };
  const lost = new AbortController();
  const heartbeat = startLeaseHeartbeat({
    everyMs: runtime.heartbeatMs,
    ttlMs: runtime.leaseTtlMs,
    renew: () => renewExecutionLease(deps.db, lease, runtime.leaseTtlMs),
    onLost: () => lost.abort(new ExecutionLeaseLostError(lease.executionId)),
  });
  const log = deps.log.child({ execution_id: execution.execution_id });
  try {
    await advanceExecution(deps, execution, AbortSignal.any([lost.signal, hardStop]));
  } catch (error) {
    if (error instanceof ExecutionLeaseLostError || lost.signal.aborted) {
      log.warn('execution lease lost; its new owner redoes the step');
      return;
    }
    if (hardStop.aborted) {
      await releaseExecution(deps.db, lease).catch(() => {});
      return;
    }
    log.error({ err: (error as Error).message }, 'execution step failed; retrying later');
    await releaseExecution(deps.db, lease, runtime.pollMs).catch(() => {});
  } finally {
    heartbeat.stop();
  }
}
