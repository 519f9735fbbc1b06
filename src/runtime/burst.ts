import { agentFor } from '../agents/lookup.js';
import type { AgentConfig } from '../config/types.js';
import { newMessageId, newRequestId } from '../ids.js';
import { turnOutcomes } from '../metrics.js';
import { priceUsage } from '../providers/registry.js';
import type { QueuedTurn, SessionTurns } from '../store/collectTurns.js';
import { commitTurn, type BurstRef, type Usage } from '../store/commitTurn.js';
import { failTurn } from '../store/failTurn.js';
import { startAttempt } from '../store/startAttempt.js';
import type { BurstState, Lease } from '../store/types.js';
import { waitForInput } from '../store/waitForInput.js';
import { abortableDelay } from './abortable.js';
import { basePrompt } from './basePrompt.js';
import { DeltaBuffer } from './deltaBuffer.js';
import type { RuntimeDeps } from './deps.js';
import { backoffMs, ProviderFailure, streamStep, type StepResult } from './modelStep.js';
import { continuePrompt, offeredTools, replyText } from './steps.js';
import {
  askForBudget,
  budgetExhausted,
  recordCalls,
  resumeBurst,
  settleCalls,
} from './toolCalls.js';
import { watchForNewInput } from './watchers.js';

export type BurstOutcome =
  /** `holding`: the commit kept the lease because more turns are queued. */
  | { kind: 'finished'; holding: boolean }
  | { kind: 'waiting' }
  | { kind: 'pivot'; attempt: number; partial: boolean }
  | { kind: 'cancel' };

export interface BurstControl {
  /** Attempts already made at this burst (0 for a fresh one). */
  attempt: number;
  /** An earlier attempt left partial text: journal `attempt_reset` first. */
  partial: boolean;
  /** Aborts everything: lease lost, or the shutdown grace period is over. */
  signal: AbortSignal;
  /** Aborts the step because a cancel was requested. */
  cancel: AbortSignal;
  allowPivot: boolean;
}

/**
 * Answers one burst (RUNTIME.md, the drain loop's body): `turn_started`, then model steps
 * until a reply without tool calls, which is committed with `done` in one token-gated
 * statement. Tool calls follow the agent's policy (steps.ts, toolCalls.ts); a call that
 * needs a person stops the turn (`waiting`) until an answer makes the session claimable
 * again, and the working conversation is saved on the session row between steps. Returns
 * early on a pivot or a cancel; throws when the lease is lost.
 */
export async function answerBurst(
  deps: RuntimeDeps,
  lease: Lease,
  agentName: string,
  turns: SessionTurns,
  state: BurstControl,
): Promise<BurstOutcome> {
  const agent = agentFor(deps, lease.tenant, agentName);
  const resumed = await resumeBurst(deps, agent, turns.burst, turns.queued);
  const supersede = (agent?.pendingInput ?? 'supersede') === 'supersede';
  if (resumed.kind === 'waiting') {
    const lastPosition = Math.max(...turns.queued.map((turn) => turn.position));
    await waitForInput(deps.db, lease, { supersede, lastPosition });
    return { kind: 'waiting' };
  }
  const { burst } = resumed;
  const inBurst = turns.queued.filter((turn) => burst.turn_ids.includes(turn.turn_id));
  const base = turns.queued.filter((turn) => burst.base_turn_ids.includes(turn.turn_id));
  const ref: BurstRef = {
    turnIds: burst.turn_ids,
    lastPosition: Math.max(...inBurst.map((turn) => turn.position)),
  };
  // Resuming after a person answered continues the same attempt; only a new owner of
  // partial output (or a fresh burst) starts a new one.
  let attempt = resumed.resumed && !state.partial ? Math.max(state.attempt, 1) : state.attempt + 1;
  const started = await startAttempt(deps.db, lease, {
    turnIds: burst.turn_ids,
    attempt,
    resetPrevious: state.partial,
    seenSequence: turns.last_sequence,
    historyBefore: (base[0] as QueuedTurn).admitted_sequence,
    historyLimit: deps.config.runtime.historyMessages,
  });

  if (!agent) {
    await failTurn(deps.db, lease, {
      ...ref,
      code: 'unknown_agent',
      message: `the agent "${agentName}" is not configured on this server`,
      usage: [],
    });
    turnOutcomes.inc({ outcome: 'error' });
    return { kind: 'finished', holding: true };
  }
  const prompt = basePrompt(agent, started.history, base);
  const tools = offeredTools(agent, deps.tools);

  for (;;) {
    if (state.cancel.aborted) return { kind: 'cancel' };
    const open = await settleCalls(deps, lease, burst, state.signal);
    if (open === 'waiting') {
      await waitForInput(deps.db, lease, { supersede, lastPosition: ref.lastPosition });
      return { kind: 'waiting' };
    }
    if (state.cancel.aborted) return { kind: 'cancel' };
    const exhausted = budgetExhausted(burst);
    if (exhausted) {
      if (agent.budgets.onExhausted === 'ask' && !exhausted.refused) {
        await askForBudget(deps, lease, burst, exhausted.reason);
        continue;
      }
      return finish(deps, lease, agent, burst, ref, {
        text: `I stopped here: ${exhausted.reason}.`,
        options: null,
        usage: [],
        tail: '',
      });
    }

    const step = await modelStep(deps, lease, agent, burst, {
      prompt: continuePrompt(prompt, burst),
      tools,
      turns: inBurst,
      attempt,
      state,
    });
    if (step.kind !== 'result') {
      if (step.kind === 'failed') {
        await failTurn(deps.db, lease, {
          ...ref,
          code: step.code,
          message: step.message,
          usage: [],
        });
        turnOutcomes.inc({ outcome: 'error' });
        return { kind: 'finished', holding: true };
      }
      return step;
    }
    attempt = step.attempt;
    const { result, tail } = step;
    const modelName = `${agent.model.provider}/${agent.model.modelId}`;
    const usage: Usage = {
      input_tokens: result.inputTokens,
      output_tokens: result.outputTokens,
      cost_usd: priceUsage(deps.config, modelName, result),
      model: modelName,
      latency_ms: result.latencyMs,
    };
    if (result.calls.length > 0) {
      await recordCalls(deps, lease, agent, burst, result, usage, tail);
      continue;
    }
    return finish(deps, lease, agent, burst, ref, {
      text: result.text,
      options: result.options,
      usage: [usage],
      tail,
    });
  }
}

async function finish(
  deps: RuntimeDeps,
  lease: Lease,
  agent: AgentConfig,
  burst: BurstState,
  ref: BurstRef,
  reply: { text: string; options: string[] | null; usage: Usage[]; tail: string },
): Promise<BurstOutcome> {
  const text = replyText(burst, reply.text);
  const committed = await commitTurn(deps.db, lease, {
    ...ref,
    messageId: newMessageId(),
    author: agent.name,
    content: agent.completionText ?? text,
    rawContent: agent.completionText === null ? null : text,
    options: reply.options ? { request_id: newRequestId(), choices: reply.options } : null,
    usage: reply.usage,
    tail: reply.tail,
  });
  turnOutcomes.inc({ outcome: 'done' });
  return { kind: 'finished', holding: committed.pending };
}

type StepOutcome =
  | { kind: 'result'; result: StepResult; tail: string; attempt: number }
  | { kind: 'failed'; code: string; message: string }
  | { kind: 'pivot'; attempt: number; partial: boolean }
  | { kind: 'cancel' };

/**
 * One model step with its retries: transient provider failures are retried with backoff
 * and full jitter (a retry after some text was journaled starts a new attempt, so clients
 * drop that text first); a pivot or a cancel aborts the stream at once.
 */
async function modelStep(
  deps: RuntimeDeps,
  lease: Lease,
  agent: AgentConfig,
  burst: BurstState,
  step: {
    prompt: ReturnType<typeof continuePrompt>;
    tools: ReturnType<typeof offeredTools>;
    turns: QueuedTurn[];
    attempt: number;
    state: BurstControl;
  },
): Promise<StepOutcome> {
  const { runtime } = deps.config;
  const { state } = step;
  const model = deps.resolveModel(agent.model.provider, agent.model.modelId);
  let attempt = step.attempt;
  for (let call = 1; ; call++) {
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
    try {
      const result = await streamStep(
        model,
        step.prompt,
        buffer,
        AbortSignal.any([state.signal, pivot.signal, state.cancel]),
        step.tools,
      );
      return { kind: 'result', result, tail: await buffer.tail(), attempt };
    } catch (error) {
      await buffer.settle();
      if (state.signal.aborted) throw error;
      if (state.cancel.aborted) return { kind: 'cancel' };
      if (pivot.signal.aborted) return { kind: 'pivot', attempt, partial: buffer.wroteText };
      if (!(error instanceof ProviderFailure)) throw error;
      const retry = error.isRetryable && call < runtime.retryAttempts;
      deps.log.warn(
        { session_id: lease.sessionId, status: error.statusCode, call, retry },
        'model call failed',
      );
      if (!retry) {
        return error.isRetryable
          ? {
              kind: 'failed',
              code: 'provider_unavailable',
              message: `the model provider did not answer after ${call} attempts`,
            }
          : {
              kind: 'failed',
              code: 'provider_error',
              message: 'the model provider refused the request',
            };
      }
      await abortableDelay(
        backoffMs(runtime.retryBaseMs, call, deps.random),
        AbortSignal.any([state.signal, state.cancel]),
      );
      if (state.signal.aborted) throw state.signal.reason;
      if (buffer.wroteText) {
        // Clients saw part of this call's text: tell them to drop it before the retry.
        attempt += 1;
        await startAttempt(deps.db, lease, {
          turnIds: burst.turn_ids,
          attempt,
          resetPrevious: true,
          seenSequence: null,
          historyBefore: 0,
          historyLimit: 0,
        });
      }
    } finally {
      pivot.stop();
    }
  }
}
