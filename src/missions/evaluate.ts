import { priceUsage } from '../providers/registry.js';
import { evaluateIteration, type EvaluationUsage } from '../providers/evaluator.js';
import type { LoopDecision } from '../protocol/events.js';
import type { ExecutionRow } from '../store/getExecution.js';
import { recordUsage } from '../store/recordUsage.js';
import { abortableDelay } from '../time/abortable.js';
import { retryDelayMs } from '../time/backoff.js';
import type { ExecutionDeps } from './deps.js';
import { iterationTurnId } from './iteration.js';

export type EvaluationOutcome =
  | { kind: 'decided'; decision: LoopDecision }
  /** The model could not answer in the schema twice (one retry), or the provider failed. */
  | { kind: 'failed'; code: string; message: string };

/** Garbage answers allowed in a row before the loop fails: the first is retried once. */
const maxGarbage = 2;

/**
 * The evaluation step of a loop iteration, under the execution's lease: the agent's model
 * decides with the loop prompt (providers/evaluator.ts). Transient provider failures are
 * retried with backoff like a model step; an answer outside the schema is retried once.
 * Each call is billed (`usage`, purpose `evaluation`) and counted on the execution.
 */
export async function evaluate(
  deps: ExecutionDeps,
  execution: ExecutionRow,
  reply: string,
  signal: AbortSignal,
  onCall: (usage: { input_tokens: number; output_tokens: number }, garbage: boolean) => void,
): Promise<EvaluationOutcome> {
  const agent = deps.agents.get(execution.tenant, execution.agent);
  if (!agent) {
    return {
      kind: 'failed',
      code: 'unknown_agent',
      message: `the agent "${execution.agent}" is not configured on this server`,
    };
  }
  const model = deps.resolveModel(agent.model.provider, agent.model.modelId);
  const modelName = `${agent.model.provider}/${agent.model.modelId}`;
  const { runtime } = deps.config;
  let garbage = execution.evaluation_failures;
  for (let call = 1; ; call++) {
    const answer = await evaluateIteration(model, {
      instructions: agent.instructions,
      mission: execution.spec.prompt,
      iteration: execution.iteration,
      maxIterations: execution.max_iterations,
      reply,
      loopPrompt: execution.spec.loop_prompt ?? '',
      note: execution.resume_note,
      timeoutMs: runtime.evaluationTimeoutMs,
      signal,
    });
    await bill(
      deps,
      execution,
      modelName,
      answer.usage,
      answer.kind === 'decided' ? 'ok' : 'failed',
    );
    onCall(
      {
        input_tokens: answer.usage?.inputTokens ?? 0,
        output_tokens: answer.usage?.outputTokens ?? 0,
      },
      answer.kind === 'garbage',
    );
    if (answer.kind === 'decided') {
      return {
        kind: 'decided',
        decision: {
          decision: answer.decision,
          reason: answer.reason,
          iteration: execution.iteration,
        },
      };
    }
    if (answer.kind === 'garbage') {
      garbage += 1;
      deps.log.warn(
        { execution_id: execution.execution_id, why: answer.why, garbage },
        'evaluation answer outside the schema',
      );
      if (garbage >= maxGarbage) {
        return {
          kind: 'failed',
          code: 'evaluation_failed',
          message: `the evaluation did not answer in the schema (${answer.why}), twice`,
        };
      }
      continue;
    }
    const failure = answer.failure;
    if (!failure.isRetryable || call >= runtime.retryAttempts) {
      return {
        kind: 'failed',
        code: failure.isRetryable ? 'provider_unavailable' : failure.code,
        message: failure.isRetryable
          ? `the model provider did not answer the evaluation after ${call} attempts`
          : failure.message,
      };
    }
    await abortableDelay(retryDelayMs(failure, runtime.retryBaseMs, call, deps.random), signal);
    if (signal.aborted) throw signal.reason;
  }
}

async function bill(
  deps: ExecutionDeps,
  execution: ExecutionRow,
  model: string,
  usage: EvaluationUsage | null,
  outcome: 'ok' | 'failed',
): Promise<void> {
  if (!usage) return;
  await recordUsage(deps.db, [
    {
      tenant: execution.tenant,
      sessionId: execution.session_id,
      turnId: iterationTurnId(execution.execution_id, execution.iteration),
      agent: execution.agent,
      model,
      purpose: 'evaluation',
      outcome,
      inputTokens: usage.inputTokens,
      outputTokens: usage.outputTokens,
      cachedInputTokens: usage.cachedInputTokens,
      reasoningTokens: usage.reasoningTokens,
      costUsd: priceUsage(deps.config, model, usage),
      latencyMs: usage.latencyMs,
      ttftMs: null,
    },
  ]);
}
