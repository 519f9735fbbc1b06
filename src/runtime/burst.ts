import type { LanguageModelV3Prompt } from '@ai-sdk/provider';
import type { AgentConfig } from '../config/types.js';
import { newMessageId, newRequestId } from '../ids.js';
import { turnOutcomes } from '../metrics.js';
import { foldInputs } from '../providers/foldedPrompt.js';
import { priceUsage } from '../providers/registry.js';
import type { PendingInput } from '../store/collectInputs.js';
import { commitTurn, failTurn, type Usage } from '../store/finishTurn.js';
import { recentMessages } from '../store/listMessages.js';
import { startAttempt } from '../store/startAttempt.js';
import type { Lease } from '../store/types.js';
import { abortableDelay } from './abortable.js';
import { DeltaBuffer } from './deltaBuffer.js';
import type { RuntimeDeps } from './deps.js';
import { backoffMs, ProviderFailure, streamStep, type StepResult } from './modelStep.js';
import { watchForNewInput } from './watchers.js';
import {
  askForBudget,
  budgetExhausted,
  recordCalls,
  resumeBurst,
  settleCalls,
} from './toolCalls.js';
import { continuePrompt, offeredTools, replyText } from './steps.js';
import { saveBurst, waitForInput } from '../store/burstState.js';

export type BurstOutcome =
  | { kind: 'finished' }
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
 * transaction. Tool calls follow the agent's policy (steps.ts, toolCalls.ts); a call that
 * needs a person stops the turn (`waiting`) until an answer makes the session claimable
 * again, and the working conversation is saved on the session row between steps. Returns
 * early on a pivot or a cancel; throws when the lease is lost.
 */
export async function answerBurst(
  deps: RuntimeDeps,
  lease: Lease,
  agentName: string,
  collected: PendingInput[],
  state: BurstControl,
): Promise<BurstOutcome> {
  const { runtime } = deps.config;
  const agent = deps.config.agents[agentName];
  const resumed = await resumeBurst(deps, lease, agent, collected);
  if (resumed.kind === 'waiting') return resumed;
  const { burst, expire, events } = resumed;
  const inputs = collected.filter((input) => burst.turn_ids.includes(input.turn_id));
  const turnIds = burst.turn_ids;
  const lead = burst.lead;
  const lastPosition = Math.max(...inputs.map((input) => input.position));
  const ref = { turnIds, lastPosition };
  // Resuming after a person answered continues the same attempt; only a new owner of
  // partial output (or a fresh burst) starts a new one.
  let attempt = resumed.resumed && !state.partial ? Math.max(state.attempt, 1) : state.attempt + 1;
  await startAttempt(deps.db, lease, { turnIds, attempt, resetPrevious: state.partial });
  if (expire.length > 0 || events.length > 0) {
    await saveBurst(deps.db, lease, burst, {
      events,
      expire: { requestIds: expire, reason: 'superseded' },
    });
  }

  if (!agent) {
    await failTurn(deps.db, lease, {
      ...ref,
      code: 'unknown_agent',
      message: `the agent "${agentName}" is not configured on this server`,
      usage: [],
    });
    turnOutcomes.inc({ outcome: 'error' });
    return { kind: 'finished' };
  }
  const modelName = `${agent.model.provider}/${agent.model.modelId}`;
  const model = deps.resolveModel(agent.model.provider, agent.model.modelId);
  const base = await buildPrompt(
    deps,
    lease,
    agent,
    collected.filter((input) => burst.base_turn_ids.includes(input.turn_id)),
  );
  const tools = offeredTools(agent, deps.tools);

  for (;;) {
    if (state.cancel.aborted) return { kind: 'cancel' };
    const open = await settleCalls(deps, lease, burst, state.signal);
    if (open === 'waiting') {
      await waitForInput(deps.db, lease, {
        supersede: agent.pendingInput === 'supersede',
        lastPosition,
      });
      return { kind: 'waiting' };
    }
    if (state.cancel.aborted) return { kind: 'cancel' };
    const exhausted = budgetExhausted(burst);
    if (exhausted) {
      if (agent.budgets.onExhausted === 'ask' && !exhausted.refused) {
        await askForBudget(deps, lease, burst, exhausted.reason);
        continue;
      }
      await commitTurn(deps.db, lease, {
        ...ref,
        messageId: newMessageId(),
        author: agent.name,
        content: replyText(burst, `I stopped here: ${exhausted.reason}.`),
        rawContent: null,
        options: null,
        usage: [],
      });
      turnOutcomes.inc({ outcome: 'done' });
      return { kind: 'finished' };
    }

    const prompt = continuePrompt(base, burst);
    let result: StepResult | null = null;
    for (let call = 1; result === null; call++) {
      const buffer = new DeltaBuffer(
        deps.db,
        lease,
        lead,
        { batchMs: runtime.deltaBatchMs, batchBytes: runtime.deltaBatchBytes },
        () => {},
      );
      const pivot = watchForNewInput(
        deps,
        lease,
        inputs,
        state.allowPivot && burst.steps.length === 0,
      );
      try {
        result = await streamStep(
          model,
          prompt,
          buffer,
          AbortSignal.any([state.signal, pivot.signal, state.cancel]),
          tools,
        );
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
          await failTurn(deps.db, lease, {
            ...ref,
            code: error.isRetryable ? 'provider_unavailable' : 'provider_error',
            message: error.isRetryable
              ? `the model provider did not answer after ${call} attempts`
              : 'the model provider refused the request',
            usage: [],
          });
          turnOutcomes.inc({ outcome: 'error' });
          return { kind: 'finished' };
        }
        await abortableDelay(
          backoffMs(runtime.retryBaseMs, call, deps.random),
          AbortSignal.any([state.signal, state.cancel]),
        );
        if (state.signal.aborted) throw state.signal.reason;
        if (buffer.wroteText) {
          // Clients saw part of this call's text: tell them to drop it before the retry.
          attempt += 1;
          await startAttempt(deps.db, lease, { turnIds, attempt, resetPrevious: true });
        }
      } finally {
        pivot.stop();
      }
    }
    const usage: Usage = {
      input_tokens: result.inputTokens,
      output_tokens: result.outputTokens,
      cost_usd: priceUsage(deps.config, modelName, result),
      model: modelName,
      latency_ms: result.latencyMs,
    };
    if (result.calls.length > 0) {
      await recordCalls(deps, lease, agent, burst, result, usage);
      continue;
    }
    const text = replyText(burst, result.text);
    await commitTurn(deps.db, lease, {
      ...ref,
      messageId: newMessageId(),
      author: agent.name,
      content: agent.completionText ?? text,
      rawContent: agent.completionText === null ? null : text,
      options: result.options ? { requestId: newRequestId(), choices: result.options } : null,
      usage: [usage],
    });
    turnOutcomes.inc({ outcome: 'done' });
    return { kind: 'finished' };
  }
}

/**
 * The model's view: the agent's instructions, the last `history_messages` transcript
 * messages before the burst, and the burst folded into one labelled user message.
 */
export async function buildPrompt(
  deps: RuntimeDeps,
  lease: Lease,
  agent: AgentConfig,
  inputs: PendingInput[],
): Promise<LanguageModelV3Prompt> {
  const first = inputs[0] as PendingInput;
  const history = await recentMessages(
    deps.db,
    lease.sessionId,
    first.admitted_sequence,
    deps.config.runtime.historyMessages,
  );
  // In a room with several people, the model must know who said what.
  const authors = new Set(
    [...history.filter((message) => message.role === 'user'), ...inputs].map(
      (input) => input.author,
    ),
  );
  const label = (author: string, text: string) => (authors.size > 1 ? `${author}: ${text}` : text);
  return [
    { role: 'system', content: agent.instructions },
    ...history.map((message) =>
      message.role === 'assistant'
        ? {
            role: 'assistant' as const,
            content: [{ type: 'text' as const, text: message.content }],
          }
        : {
            role: 'user' as const,
            content: [{ type: 'text' as const, text: label(message.author, message.content) }],
          },
    ),
    {
      role: 'user',
      content: [
        {
          type: 'text',
          text: foldInputs(
            inputs.map((input) => ({ author: input.author, content: inputText(input) })),
          ),
        },
      ],
    },
  ];
}

/** A pressed option is applied first: the model reads the choice, then any text. */
function inputText(input: PendingInput): string {
  if (!input.option) return input.content;
  const choice = `Selected option: ${input.option.value}`;
  return input.content.trim() ? `${choice}\n${input.content}` : choice;
}
