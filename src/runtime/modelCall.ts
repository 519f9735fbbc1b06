import type { LanguageModelV3FunctionTool } from '@ai-sdk/provider';
import type { AgentConfig } from '../config/types.js';
import type { NewEvent } from '../protocol/events.js';
import type { QueuedTurn } from '../store/collectTurns.js';
import { startAttempt } from '../store/startAttempt.js';
import type { BurstState, Lease } from '../store/types.js';
import type { Usage } from '../store/usageRows.js';
import { abortableDelay } from '../time/abortable.js';
import { retryDelayMs } from '../time/backoff.js';
import { DeltaBuffer } from './deltaBuffer.js';
import type { RuntimeDeps } from './deps.js';
import type { Prompter, PromptOptions } from './fold.js';
import { agentCallSettings, ProviderFailure, streamStep, type StepResult } from './modelStep.js';
import { estimatedUsage, usageOf } from './usage.js';
import { watchForNewInput } from './watchers.js';

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
    /** The agent revision the turn runs with, journaled again by a new attempt. */
    agentRevision: number | null;
  },
): Promise<StepOutcome> {
  const { runtime } = deps.config;
  const { state } = step;
  const modelName = `${agent.model.provider}/${agent.model.modelId}`;
  const model = deps.resolveModel(agent.model.provider, agent.model.modelId);
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
    const started = Date.now();
    try {
      const result = await streamStep(
        model,
        built.prompt,
        buffer,
        AbortSignal.any([state.signal, pivot.signal, state.cancel]),
        step.tools,
        {
          settings: agentCallSettings(agent),
          onReasoning: (delta) => buffer.push(delta, 'reasoning'),
        },
      );
      const usage = usageOf(deps.config, modelName, result);
      return { kind: 'result', result, usage, tail: await buffer.tail(), attempt, unbilled };
    } catch (error) {
      await buffer.settle();
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
      if (state.signal.aborted) throw error;
      if (state.cancel.aborted) return { kind: 'cancel', unbilled };
      if (pivot.signal.aborted) {
        return { kind: 'pivot', attempt, partial: buffer.wroteText, unbilled };
      }
      if (!(error instanceof ProviderFailure)) throw error;
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
                  : `the model provider did not answer after ${failures} attempts`,
              unbilled,
            }
          : { kind: 'failed', code: error.code, message: error.message, unbilled };
      }
      if (second) Object.assign(options, second);
      else {
        await abortableDelay(
          retryDelayMs(error, runtime.retryBaseMs, failures, deps.random),
          AbortSignal.any([state.signal, state.cancel]),
        );
        if (state.signal.aborted) throw state.signal.reason;
        if (state.cancel.aborted) return { kind: 'cancel', unbilled };
      }
      if (buffer.wroteText) {
        // Clients saw part of this call's output: tell them to drop it before the retry.
        attempt += 1;
        await startAttempt(deps.db, lease, {
          turnIds: burst.turn_ids,
          attempt,
          resetPrevious: true,
          seenSequence: null,
          historyBefore: 0,
          historyLimit: 0,
          historyBytes: 0,
          agent: agent.name,
          agentRevision: step.agentRevision,
        });
      }
    } finally {
      pivot.stop();
    }
  }
}
