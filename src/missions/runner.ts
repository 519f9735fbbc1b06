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
import { abortableDelay, cancellableDelay, drainWithin } from '../time/abortable.js';
import { advanceExecution } from './advance.js';
import type { ExecutionDeps } from './deps.js';
import { executionOfTurn } from './iteration.js';

/** Journal events after which an execution has something to look at. */
const wakingTypes = new Set(['done', 'error', 'cancelled', 'input_required', 'input_resolved']);

/**
 * The execution runner: the worker role's second loop, beside the claim loop of sessions.
 * States: `running` (claims due executions while below max_parallel_executions, each step
 * under its lease with a heartbeat), `idle-waiting` (nothing due: sleeps until the earliest
 * timer, a wake-up, or the poll interval, which also covers lost wake-ups and the expired
 * leases of dead workers), `stopping` (no more claims; running steps finish within the
 * grace period, then are aborted and give their executions back), `stopped`.
 *
 * Wake-ups: a dispatch, cancel or unblock (`execution`), and a terminal event of an
 * execution's turn in any session (`events` carrying a turn `exec.ID.N`): that execution's
 * timer is advanced to now, so it does not wait for its re-check.
 */
export class ExecutionRunner {
  private readonly active = new Set<Promise<void>>();
  private readonly shutdown = new AbortController();
  private readonly hardStop = new AbortController();
  private wake = new AbortController();
  private loop: Promise<void> | null = null;
  private unsubscribe: (() => void) | null = null;

  constructor(private readonly deps: ExecutionDeps) {}

  start(): void {
    if (this.loop) return;
    this.unsubscribe = this.deps.wakeups.subscribe((wakeup) => this.onWakeup(wakeup));
    this.loop = this.run();
  }

  get activeExecutions(): number {
    return this.active.size;
  }

  async stop(): Promise<void> {
    if (this.shutdown.signal.aborted) return this.loop ?? undefined;
    this.shutdown.abort();
    this.wake.abort();
    this.unsubscribe?.();
    await this.loop;
    await drainWithin(
      this.active,
      this.deps.config.runtime.shutdownGraceMs,
      this.hardStop.signal,
      () => this.hardStop.abort(new Error('shutdown grace period over')),
    );
  }

  private onWakeup(wakeup: Wakeup): void {
    if (wakeup.kind === 'execution') {
      this.wake.abort();
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
      wakeExecution(this.deps.db, { sessionId: wakeup.sessionId, executionId }).then(
        (woken) => {
          if (woken) this.wake.abort();
        },
        (error: unknown) =>
          this.deps.log.warn({ err: (error as Error).message }, 'waking an execution failed'),
      );
    }
  }

  private async run(): Promise<void> {
    const { runtime } = this.deps.config;
    while (!this.shutdown.signal.aborted) {
      const free = runtime.maxParallelExecutions - this.active.size;
      if (free <= 0) {
        const delay = cancellableDelay(runtime.pollMs, this.shutdown.signal);
        await Promise.race([...this.active, delay.done]);
        delay.cancel();
        continue;
      }
      // A wake-up that arrives while we claim must not be lost: re-arm before claiming.
      this.wake = new AbortController();
      let claimed: ClaimedExecution[];
      let sleepMs = runtime.pollMs;
      try {
        claimed = await claimExecutions(this.deps.db, {
          token: newLeaseToken(),
          owner: this.deps.owner,
          ttlMs: runtime.leaseTtlMs,
          limit: free,
        });
        if (claimed.length === 0) {
          const next = await msUntilNextExecution(this.deps.db);
          if (next !== null) sleepMs = Math.min(sleepMs, Math.max(1, next));
        }
      } catch (error) {
        this.deps.log.error({ err: (error as Error).message }, 'claiming executions failed');
        await abortableDelay(runtime.pollMs, this.shutdown.signal);
        continue;
      }
      for (const execution of claimed) {
        const step = this.step(execution).finally(() => this.active.delete(step));
        this.active.add(step);
      }
      if (claimed.length === 0) {
        await abortableDelay(sleepMs, AbortSignal.any([this.wake.signal, this.shutdown.signal]));
      }
    }
  }

  /** One execution's step, with a heartbeat on its lease; never throws. */
  private async step(execution: ClaimedExecution): Promise<void> {
    const { runtime } = this.deps.config;
    const lease: ExecutionLease = {
      tenant: execution.tenant,
      executionId: execution.execution_id,
      token: execution.lease_token as string,
    };
    const lost = new AbortController();
    const heartbeat = setInterval(() => {
      renewExecutionLease(this.deps.db, lease, runtime.leaseTtlMs).then(
        (held) => {
          if (!held) lost.abort(new ExecutionLeaseLostError(lease.executionId));
        },
        () => {
          // A failed renewal is retried at the next beat; the lease outlives a few.
        },
      );
    }, runtime.heartbeatMs);
    const log = this.deps.log.child({ execution_id: execution.execution_id });
    try {
      await advanceExecution(
        this.deps,
        execution,
        AbortSignal.any([lost.signal, this.hardStop.signal]),
      );
    } catch (error) {
      if (error instanceof ExecutionLeaseLostError || lost.signal.aborted) {
        log.warn('execution lease lost; its new owner redoes the step');
        return;
      }
      if (this.hardStop.signal.aborted) {
        await releaseExecution(this.deps.db, lease).catch(() => {});
        return;
      }
      log.error({ err: (error as Error).message }, 'execution step failed; retrying later');
      await releaseExecution(this.deps.db, lease, runtime.pollMs).catch(() => {});
    } finally {
      clearInterval(heartbeat);
    }
  }
}
