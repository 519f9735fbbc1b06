import { evaluateIteration } from '../providers/evaluator.js';
import type { LoopDecision } from '../protocol/events.js';
import type { ExecutionRow } from '../store/getExecution.js';
import type { ExecutionDeps } from './deps.js';
import { forcedCallWithRetries } from './forcedCallRetry.js';

export type EvaluationOutcome =
  | { kind: 'decided'; decision: LoopDecision }
  /** The model could not answer in the schema twice (one retry), or the provider failed. */
  | { kind: 'failed'; code: string; message: string };

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
  const outcome = await forcedCallWithRetries(
    deps,
    execution,
    { agent, purpose: 'evaluation' },
    () =>
      evaluateIteration(model, {
        instructions: agent.instructions,
        mission: execution.spec.prompt,
        iteration: execution.iteration,
        maxIterations: execution.max_iterations,
        reply,
        loopPrompt: execution.spec.loop_prompt ?? '',
        note: execution.resume_note,
        timeoutMs: deps.config.runtime.evaluationTimeoutMs,
        signal,
      }),
    {
      signal,
      garbageSoFar: execution.evaluation_failures,
      onCall: (answer) =>
        onCall(
          {
            input_tokens: answer.usage?.inputTokens ?? 0,
            output_tokens: answer.usage?.outputTokens ?? 0,
          },
          answer.kind === 'garbage',
        ),
    },
  );
  if (outcome.kind === 'decided') {
    return {
      kind: 'decided',
      decision: {
        decision: outcome.decision,
        reason: outcome.reason,
        iteration: execution.iteration,
      },
    };
  }
  if (outcome.kind === 'garbage') {
    return {
      kind: 'failed',
      code: 'evaluation_failed',
      message: `the evaluation did not answer in the schema (${outcome.why}), twice`,
    };
  }
  const { failure, calls } = outcome;
  return {
    kind: 'failed',
    code: failure.isRetryable ? 'provider_unavailable' : failure.code,
    message: failure.isRetryable
      ? `the model provider did not answer the evaluation after ${calls} attempts`
      : failure.message,
  };
}
