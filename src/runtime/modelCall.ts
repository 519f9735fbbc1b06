import type { LanguageModelV3FunctionTool } from '@ai-sdk/provider';
import type { AgentConfig } from '../config/types.js';
import type { NewEvent } from '../protocol/events.js';
import type { QueuedTurn } from '../store/collectTurns.js';
import { appendEvents } from '../store/appendEvents.js';
import { startAttempt } from '../store/startAttempt.js';
import type { BurstState, Lease } from '../store/types.js';
import type { Usage } from '../store/usageRows.js';
import type { TurnTrace } from '../telemetry/tracing.js';
import { abortableDelay } from '../time/abortable.js';
import { retryDelayMs } from '../time/backoff.js';
import { DeltaBuffer } from './deltaBuffer.js';
import type { RuntimeDeps } from './deps.js';
import type { Prompter, PromptOptions } from './fold.js';
import { agentCallSettings, ProviderFailure, streamStep, type StepResult } from './modelStep.js';
import { estimatedUsage, usageOf } from './usage.js';
import { countStall, StallError, type Watchdog } from './watchdog.js';
import { watchForNewInput } from './watchers.js';
import { linkedSignal } from '../linkedSignal.js';

/** What stops a model step, and whether new input may break it off. */
export interface StepControl {
  /** Aborts everything: lease lost, or the shutdown grace period is over. */
  signal: AbortSignal;
  /** Aborts the step because a cancel was requested. */
  cancel: AbortSignal;
  /** New input may break off this step (a pivot). */
  allowPivot: boolean;
}

export type StepOutcome = { unbilled: Usage[] } & (
  | { kind: 'result'; result: StepResult; usage: Usage; tail: NewEvent[]; attempt: number }
  | { kind: 'failed'; code: string; message: string }
  | { kind: 'pivot'; attempt: number; partial: boolean }
  | { kind: 'cancel' }
);

/**
 * One model step with its retries (RUNTIME.md, "Provider errors"): transient failures
 * (429, 5xx, network, a stream cut mid-way or stalled past its provider's deadlines) are
 * retried with backoff and full jitter,
 * honouring `retry-after`, up to `retry_attempts` calls; a retry after some output was
 * journaled starts a new attempt (clients drop that output first). A `context_length`
 * refusal is retried once with a tighter history, and a call that carried images and was
 * refused is retried once without them. A pivot or a cancel aborts the stream at once.
 * The progress watchdog aborts a call that makes no progress (watchdog.ts): the stall is
 * journaled, and the call tried again until the turn's stall budget is spent, then the
 * step fails with `stalled`.
 * Calls that broke off are billed too (`unbilled`: the caller writes them with the
 * statement that closes the step).
 */
export async function modelStep(
  deps: RuntimeDeps,
  lease: Lease,
  agent: AgentConfig,
  burst: BurstState,
  step: {
    prompt: Prompter;
    tools: LanguageModelV3FunctionTool[];
    turns: QueuedTurn[];
    attempt: number;
    state: StepControl;
    watchdog: Watchdog;
    /** The agent revision the turn runs with, journaled again by a new attempt. */
    agentRevision: number | null;
    /** The turn run's span: each call is a `chat` span under it. */
    trace: TurnTrace;
  },
): Promise<StepOutcome> {
  const { runtime } = deps.config;
  const { state } = step;
  let current = agent.model;
  let modelName = `${current.provider}/${current.modelId}`;
  let model = deps.resolveModel(agent.model.provider, agent.model.modelId);
  let failedOver = false;
  const options: PromptOptions = {};
  const unbilled: Usage[] = [];
  let attempt = step.attempt;
  let failures = 0;
  for (;;) {
    const built = await step.prompt(options);
    const buffer = new DeltaBuffer(deps.db, lease, burst.lead, {
      batchMs: runtime.deltaBatchMs,
      batchBytes: runtime.deltaBatchBytes,
    });
    const pivot = watchForNewInput(
      deps,
      lease,
      step.turns,
      state.allowPivot && burst.steps.length === 0,
    );
    const watch = step.watchdog.watchStep();
    const stopping = linkedSignal(state.signal, pivot.signal, state.cancel, watch.signal);
    const started = Date.now();
    const call = step.trace.chat({
      provider: current.provider,
      model: current.modelId,
      prompt: built.prompt,
    });
    try {
      const result = await streamStep(model, built.prompt, buffer, stopping.signal, step.tools, {
        settings: agentCallSettings(agent),
        onReasoning: (delta) => buffer.push(delta, 'reasoning'),
        onProgress: (progress) => (progress === 'output' ? watch.output() : watch.keepAlive()),
      });
      const usage = usageOf(deps.config, modelName, result);
      call.end({ ...result, costUsd: usage.cost_usd });
      return { kind: 'result', result, usage, tail: await buffer.tail(), attempt, unbilled };
    } catch (error) {
      call.fail(callErrorType(error, state, pivot.signal, watch.signal));
      await buffer.settle();
      // A call its provider's open circuit refused was never sent: nothing to bill.
      const refused = error instanceof ProviderFailure && error.code === 'provider_circuit_open';
      if (!refused) {
        unbilled.push(
          estimatedUsage(
            deps.config,
            modelName,
            {
              prompt: built.prompt,
              streamedChars: buffer.pushedChars,
              latencyMs: Date.now() - started,
            },
            state.cancel.aborted || pivot.signal.aborted ? 'cancelled' : 'failed',
          ),
        );
      }
      if (state.signal.aborted) throw error;
      if (state.cancel.aborted) return { kind: 'cancel', unbilled };
      if (pivot.signal.aborted) {
        return { kind: 'pivot', attempt, partial: buffer.wroteText, unbilled };
      }
      if (watch.signal.reason instanceof StallError) {
        const stalled = watch.signal.reason;
        const stall = step.watchdog.decide(stalled.what, stalled.sinceMs);
        await appendEvents(deps.db, lease, [stall.event]);
        countStall(stall);
        deps.log.warn(
          { session_id: lease.sessionId, what: stalled.what, action: stall.action },
          'model step stalled',
        );
        if (stall.action === 'end') {
          return {
            kind: 'failed',
            code: 'stalled',
            message: step.watchdog.endMessage(stalled.what),
            unbilled,
          };
        }
        attempt = await resetIfShown(deps, lease, burst, buffer, attempt, {
          agent: agent.name,
          agentRevision: step.agentRevision,
        });
        continue;
      }
      if (!(error instanceof ProviderFailure)) throw error;
      if (refused && agent.fallbackModel && !failedOver) {
        // The step goes to the fallback model at once; the next step tries the circuit again.
        failedOver = true;
        current = agent.fallbackModel;
        modelName = `${agent.fallbackModel.provider}/${agent.fallbackModel.modelId}`;
        model = deps.resolveModel(agent.fallbackModel.provider, agent.fallbackModel.modelId);
        deps.log.warn(
          { session_id: lease.sessionId, provider: agent.model.provider, fallback: modelName },
          'circuit open: the step fails over to the fallback model',
        );
        continue;
      }
      failures += 1;
      const second =
        error.code === 'context_length' && !options.tighter
          ? { tighter: true }
          : !error.isRetryable && built.images > 0 && !options.withoutImages
            ? { withoutImages: true }
            : null;
      const retry = second !== null || (error.isRetryable && failures < runtime.retryAttempts);
      deps.log.warn(
        { session_id: lease.sessionId, status: error.statusCode, code: error.code, retry },
        'model call failed',
      );
      if (!retry) {
        // Retries spent: the last failure names the turn's error (`provider_timeout` when
        // the provider stalled, else `provider_unavailable`).
        return error.isRetryable
          ? {
              kind: 'failed',
              code: error.code === 'provider_timeout' ? error.code : 'provider_unavailable',
              message:
                error.code === 'provider_timeout'
                  ? `the model provider stopped answering (${failures} attempts)`
                  : refused
                    ? `the model provider kept failing and its circuit is open (${failures} attempts)`
                    : `the model provider did not answer after ${failures} attempts`,
              unbilled,
            }
          : { kind: 'failed', code: error.code, message: error.message, unbilled };
      }
      if (second) Object.assign(options, second);
      else {
        const waiting = linkedSignal(state.signal, state.cancel);
        try {
          await abortableDelay(
            retryDelayMs(error, runtime.retryBaseMs, failures, deps.random),
            waiting.signal,
          );
        } finally {
          waiting.dispose();
        }
        if (state.signal.aborted) throw state.signal.reason;
        if (state.cancel.aborted) return { kind: 'cancel', unbilled };
      }
      attempt = await resetIfShown(deps, lease, burst, buffer, attempt, {
        agent: agent.name,
        agentRevision: step.agentRevision,
      });
    } finally {
      stopping.dispose();
      pivot.stop();
      watch.stop();
    }
  }
}

/** Why a call did not complete, as its span's `error.type`. */
function callErrorType(
  error: unknown,
  state: StepControl,
  pivot: AbortSignal,
  watch: AbortSignal,
): string {
  if (state.signal.aborted) return 'aborted';
  if (state.cancel.aborted) return 'cancelled';
  if (pivot.aborted) return 'pivot';
  if (watch.reason instanceof StallError) return 'stalled';
  if (error instanceof ProviderFailure) return error.code;
  return error instanceof Error ? error.name : '_OTHER';
}

/**
 * Before a retry: when clients saw part of the failed call's output, a new attempt starts
 * (`attempt_reset` tells them to drop it). Returns the attempt the retry runs as.
 */
async function resetIfShown(
  deps: RuntimeDeps,
  lease: Lease,
  burst: BurstState,
  buffer: DeltaBuffer,
  attempt: number,
  pinned: { agent: string; agentRevision: number | null },
): Promise<number> {
  if (!buffer.wroteText) return attempt;
  await startAttempt(deps.db, lease, {
    turnIds: burst.turn_ids,
    attempt: attempt + 1,
    resetPrevious: true,
    seenSequence: null,
    historyBefore: 0,
    historyLimit: 0,
    historyBytes: 0,
    ...pinned,
  });
  return attempt + 1;
}
