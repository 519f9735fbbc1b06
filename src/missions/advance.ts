import { cancelTurn } from '../store/cancelTurn.js';
import type { ClaimedExecution, ExecutionLease } from '../store/claimExecutions.js';
import { cancelExecution } from '../store/cancelExecution.js';
import { getExecution, isEnded, type ExecutionRow } from '../store/getExecution.js';
import { listThreads } from '../store/listThreads.js';
import { readTurnOutcome } from '../store/readTurnOutcome.js';
import { saveExecution, type ExecutionState } from '../store/saveExecution.js';
import type { ExecutionDeps } from './deps.js';
import { evaluate } from './evaluate.js';
import { admitIteration, iterationTurnId } from './iteration.js';
import { resolveByAgent } from './resolve.js';

/**
 * One step of an execution, under its lease (the runner claimed it because its timer is
 * due). The states (seed 003's statuses; `loop_status` for loops):
 *
 * - `starting` / `waiting` (the loop's delay is over): admit the next iteration's turn →
 *   `running`, re-checked on a timer (or at once, woken by the turn's terminal event).
 * - `running` / `interrupted`: read the iteration turn's outcome from the journal: still
 *   running; waiting for a person or an agent (`interrupted`; routed to `agent:NAME`, that
 *   agent is asked); `error` / `cancelled`; or `done` → a one-shot mission succeeds, a loop
 *   is evaluated (`evaluating`) and continues after its delay (`waiting`), completes
 *   (`success`), blocks (`blocked`, until a person unblocks it) or hits `limit_reached`.
 * - a fan-out parent: `running` until every thread has ended, then gathers their results.
 * - a cancel request or the timeout, whatever the state: the running turn is cancelled
 *   through the ordinary cancel, the threads too, and the execution ends.
 *
 * Every write is gated on the lease (saveExecution); a crash anywhere leaves the timer on
 * the row, and whoever claims it next redoes the step: admissions are idempotent by their
 * turn id, an evaluation is redone, a decision is written once.
 */
export async function advanceExecution(
  deps: ExecutionDeps,
  claimed: ClaimedExecution,
  signal: AbortSignal,
): Promise<void> {
  const step = new Step(deps, claimed, signal);
  if (claimed.cancel_command_id !== null || claimed.timed_out) {
    return step.stop(claimed.cancel_command_id !== null ? 'cancelled' : 'timeout');
  }
  if (claimed.spec.threads !== null) return step.gather();
  switch (claimed.status) {
    case 'starting':
    case 'waiting':
      return step.startIteration();
    case 'running':
    case 'interrupted':
      return step.followIteration();
    default:
      // A blocked loop has no timer but its timeout; an ended one is never due.
      await step.save({ ...step.state, delayMs: null });
  }
}

class Step {
  readonly lease: ExecutionLease;
  readonly state: ExecutionState;
  readonly loop: boolean;

  constructor(
    private readonly deps: ExecutionDeps,
    private readonly execution: ClaimedExecution,
    private readonly signal: AbortSignal,
  ) {
    this.lease = {
      tenant: execution.tenant,
      executionId: execution.execution_id,
      token: execution.lease_token as string,
    };
    this.loop = execution.spec.loop_prompt !== null && execution.spec.threads === null;
    this.state = {
      status: execution.status,
      loop_status: execution.loop_status,
      iteration: execution.iteration,
      loop_decision: execution.loop_decision,
      result: execution.result ?? null,
      evaluation_failures: execution.evaluation_failures,
      resume_note: execution.resume_note,
      resolvers: execution.resolvers,
      input_tokens: execution.input_tokens,
      output_tokens: execution.output_tokens,
      delayMs: null,
    };
  }

  private get recheckMs(): number {
    return this.deps.config.runtime.executionRecheckMs;
  }

  /** Saves, announcing in the session when the visible state changed. */
  async save(next: ExecutionState, hold = false): Promise<ExecutionRow> {
    if (this.signal.aborted) throw this.signal.reason;
    const changed =
      next.status !== this.execution.status ||
      next.loop_status !== this.execution.loop_status ||
      next.iteration !== this.execution.iteration ||
      JSON.stringify(next.loop_decision) !== JSON.stringify(this.execution.loop_decision);
    const saved = await saveExecution(this.deps.db, this.lease, next, { hold, announce: changed });
    Object.assign(this.execution, saved);
    return saved;
  }

  async stop(status: 'cancelled' | 'timeout'): Promise<void> {
    const { execution } = this;
    const actor = { user: `execution:${execution.execution_id}`, tenant: execution.tenant };
    // The current iteration's turn, and the next one's: a step admits the next iteration
    // before it saves it (two commits), so a stop between them finds that turn admitted
    // but not counted, and it must not run on after the execution ended.
    // That turn counts as an iteration either way (it ran, or it is cancelled now), so the
    // row's iteration never stays behind the turns its session holds.
    const iterations = [execution.iteration, execution.iteration + 1];
    let counted = execution.iteration;
    for (const iteration of execution.spec.threads === null ? iterations : []) {
      if (iteration === 0) continue;
      const turnId = iterationTurnId(execution.execution_id, iteration);
      const outcome = await readTurnOutcome(this.deps.db, execution.session_id, turnId);
      if (outcome.kind !== 'missing') counted = Math.max(counted, iteration);
      if (outcome.kind === 'pending' || outcome.kind === 'waiting') {
        // The ordinary cancel: the drain loop stops the turn cooperatively, pending
        // requests expire, and the turn ends with `cancelled`.
        const next = iteration > execution.iteration ? '.next' : '';
        await cancelTurn(this.deps.db, {
          tenant: execution.tenant,
          sessionId: execution.session_id,
          turnId,
          commandId: `exec.${execution.execution_id}.${status}${next}`,
          actor,
        });
      }
    }
    if (status === 'cancelled') {
      for (const thread of await listThreads(this.deps.db, execution)) {
        if (isEnded(thread.status)) continue;
        await cancelExecution(this.deps.db, {
          tenant: execution.tenant,
          executionId: thread.execution_id,
          commandId: `exec.${thread.execution_id}.cancel`,
        });
      }
    }
    await this.save({
      ...this.state,
      status,
      iteration: counted,
      loop_status: this.state.loop_status === null ? null : 'idle',
      result:
        status === 'timeout'
          ? {
              error: {
                code: 'timeout',
                message: 'the execution ran out of time (timeout_seconds)',
              },
            }
          : null,
    });
  }

  async startIteration(): Promise<void> {
    const { execution } = this;
    if (execution.status === 'starting' && execution.after_execution_id !== null) {
      // overlap: queue — wait for the predecessor to end (its end wakes this one).
      const before = await getExecution(
        this.deps.db,
        execution.tenant,
        execution.after_execution_id,
      );
      if (before && !isEnded(before.status)) {
        // Its end wakes this one; the re-check covers a wake-up lost to a race.
        await this.save({ ...this.state, delayMs: this.recheckMs });
        return;
      }
    }
    const iteration = execution.iteration + 1;
    await admitIteration(this.deps, execution, iteration, this.lease);
    await this.save({
      ...this.state,
      status: 'running',
      loop_status: this.loop ? 'running' : null,
      iteration,
      evaluation_failures: 0,
      delayMs: this.recheckMs,
    });
  }

  async followIteration(): Promise<void> {
    const { execution, state } = this;
    const turnId = iterationTurnId(execution.execution_id, execution.iteration);
    const outcome = await readTurnOutcome(this.deps.db, execution.session_id, turnId);
    switch (outcome.kind) {
      case 'missing':
        // Cannot happen after a save of `running` (the admission came first); admit again.
        await admitIteration(this.deps, execution, execution.iteration, this.lease);
        return void (await this.save({ ...state, delayMs: this.recheckMs }));
      case 'pending':
        return void (await this.save({
          ...state,
          status: 'running',
          loop_status: this.loop ? 'running' : null,
          delayMs: this.recheckMs,
        }));
      case 'waiting': {
        const route = execution.interrupt_to;
        const resolvers = route?.startsWith('agent:')
          ? await resolveByAgent(
              this.deps,
              execution,
              route.slice('agent:'.length),
              outcome.requests,
              this.signal,
            )
          : state.resolvers;
        return void (await this.save({
          ...state,
          status: 'interrupted',
          loop_status: this.loop ? 'waiting' : null,
          resolvers,
          delayMs: this.recheckMs,
        }));
      }
      case 'error':
        return void (await this.save({
          ...state,
          status: 'error',
          loop_status: this.loop ? 'failed' : null,
          result: { error: { code: outcome.code, message: outcome.message } },
        }));
      case 'cancelled':
        return void (await this.save({
          ...state,
          status: 'cancelled',
          loop_status: this.loop ? 'idle' : null,
        }));
      case 'done':
        if (!this.loop) {
          return void (await this.save({
            ...state,
            status: 'success',
            result: { content: outcome.content },
          }));
        }
        return this.evaluateIteration(outcome.content);
    }
  }

  private async evaluateIteration(reply: string): Promise<void> {
    const { execution } = this;
    let state: ExecutionState = { ...this.state, status: 'running', loop_status: 'evaluating' };
    await this.save({ ...state, delayMs: this.recheckMs }, true);
    const outcome = await evaluate(this.deps, execution, reply, this.signal, (usage, garbage) => {
      state = {
        ...state,
        input_tokens: state.input_tokens + usage.input_tokens,
        output_tokens: state.output_tokens + usage.output_tokens,
        evaluation_failures: state.evaluation_failures + (garbage ? 1 : 0),
      };
    });
    const content = { content: reply };
    if (outcome.kind === 'failed') {
      return void (await this.save({
        ...state,
        status: 'error',
        loop_status: 'failed',
        result: { error: { code: outcome.code, message: outcome.message }, ...content },
      }));
    }
    // The note of whoever unblocked it served this iteration and its evaluation.
    const decided = {
      ...state,
      loop_decision: outcome.decision,
      evaluation_failures: 0,
      resume_note: null,
    };
    switch (outcome.decision.decision) {
      case 'complete':
        return void (await this.save({
          ...decided,
          status: 'success',
          loop_status: 'completed',
          result: content,
        }));
      case 'blocked':
        return void (await this.save({
          ...decided,
          status: 'blocked',
          loop_status: 'blocked',
          delayMs: null,
        }));
      case 'continue':
        if (execution.iteration >= execution.max_iterations) {
          return void (await this.save({
            ...decided,
            status: 'limit_reached',
            loop_status: 'limit_reached',
            result: content,
          }));
        }
        return void (await this.save({
          ...decided,
          status: 'waiting',
          loop_status: 'idle',
          delayMs: (execution.spec.loop_delay_seconds ?? 0) * 1000,
        }));
    }
  }

  /** A fan-out parent: `running` until its threads have all ended, then their results. */
  async gather(): Promise<void> {
    const threads = await listThreads(this.deps.db, this.execution);
    const open = threads.filter((thread) => !isEnded(thread.status));
    if (open.length > 0) {
      // A thread's end wakes the parent; the re-check covers a wake-up lost to a race.
      return void (await this.save({ ...this.state, status: 'running', delayMs: this.recheckMs }));
    }
    await this.save({
      ...this.state,
      status: threads.every((thread) => thread.status === 'success') ? 'success' : 'error',
      result: {
        threads: threads.map((thread) => ({
          execution_id: thread.execution_id,
          agent: thread.agent,
          session_id: thread.session_id,
          status: thread.status,
          result: thread.result ?? null,
        })),
      },
    });
  }
}
