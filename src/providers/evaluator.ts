import type { LanguageModelV3, LanguageModelV3FunctionTool } from '@ai-sdk/provider';
import { forcedToolCall, type CallUsage } from './forcedCall.js';
import { classifyProviderError, ProviderFailure } from './failure.js';

/**
 * A loop mission's evaluation step: after an iteration, the agent's model
 * decides `continue`, `complete` or `blocked` with a reason, through a forced tool call —
 * the one structured output every provider kind supports (the scope gate's technique,
 * gate.ts). An answer outside the schema (no call, unparsable, an unknown decision) is
 * `garbage`: the caller retries once, then the loop fails. A provider failure is reported
 * as such, so the caller can retry a transient one with backoff.
 */
export const decisionToolName = 'record_decision';

export type EvaluationUsage = CallUsage;

export interface EvaluationRequest {
  /** The agent's instructions: the evaluator is the agent, judging its own work. */
  instructions: string;
  /** The mission's prompt, as the first iteration received it. */
  mission: string;
  iteration: number;
  maxIterations: number;
  /** The iteration's final reply. */
  reply: string;
  loopPrompt: string;
  /** What a person said when unblocking the loop, if anyone did since the last decision. */
  note: string | null;
  timeoutMs: number;
  signal?: AbortSignal;
  now?: () => number;
}

export type Evaluation =
  | {
      kind: 'decided';
      decision: 'continue' | 'complete' | 'blocked';
      reason: string;
      usage: EvaluationUsage | null;
    }
  | { kind: 'garbage'; why: string; usage: EvaluationUsage | null }
  | { kind: 'failed'; failure: ProviderFailure; usage: EvaluationUsage | null };

const decisionTool: LanguageModelV3FunctionTool = {
  type: 'function',
  name: decisionToolName,
  description: 'Record the decision about the mission after this iteration.',
  inputSchema: {
    type: 'object',
    properties: {
      decision: {
        type: 'string',
        enum: ['continue', 'complete', 'blocked'],
        description:
          'continue: more iterations are needed; complete: the objective is met; blocked: a person must act first',
      },
      reason: { type: 'string', description: 'one short sentence' },
    },
    required: ['decision', 'reason'],
    additionalProperties: false,
  },
};

export function evaluationPrompt(request: EvaluationRequest): { system: string; user: string } {
  const system = [
    request.instructions,
    '',
    `You are evaluating a mission after one of its iterations. You never continue the work yourself: call ${decisionToolName} with a decision and a one-sentence reason.`,
  ].join('\n');
  const user = [
    `Mission: ${request.mission}`,
    `Iteration: ${request.iteration} of ${request.maxIterations}`,
    '',
    'The last reply:',
    request.reply,
    '',
    'How to evaluate:',
    request.loopPrompt,
    ...(request.note === null
      ? []
      : ['', `A person unblocked the mission and said: ${request.note}`]),
  ].join('\n');
  return { system, user };
}

export async function evaluateIteration(
  model: LanguageModelV3,
  request: EvaluationRequest,
): Promise<Evaluation> {
  const now = request.now ?? Date.now;
  const started = now();
  const timeout = AbortSignal.timeout(request.timeoutMs);
  const signal = request.signal ? AbortSignal.any([request.signal, timeout]) : timeout;
  const prompt = evaluationPrompt(request);
  const spent: { usage: EvaluationUsage | null } = { usage: null };
  let answer: string | null;
  try {
    answer = await forcedToolCall(
      model,
      { system: prompt.system, user: prompt.user, tool: decisionTool, signal, started, now },
      spent,
    );
  } catch (error) {
    if (request.signal?.aborted) throw request.signal.reason;
    // A call that outlived its time is the provider being slow: transient, like a 5xx.
    if (timeout.aborted)
      return { kind: 'failed', failure: new ProviderFailure(true, null), usage: spent.usage };
    return { kind: 'failed', failure: classifyProviderError(error, now), usage: spent.usage };
  }
  if (request.signal?.aborted) throw request.signal.reason;
  if (timeout.aborted)
    return { kind: 'failed', failure: new ProviderFailure(true, null), usage: spent.usage };
  if (answer === null)
    return { kind: 'garbage', why: 'the model gave no decision', usage: spent.usage };
  const parsed = parseDecision(answer);
  if (!parsed)
    return { kind: 'garbage', why: 'the decision was not in the schema', usage: spent.usage };
  return { kind: 'decided', ...parsed, usage: spent.usage };
}

function parseDecision(
  input: string,
): { decision: 'continue' | 'complete' | 'blocked'; reason: string } | null {
  try {
    const value = JSON.parse(input) as { decision?: unknown; reason?: unknown };
    if (
      value.decision !== 'continue' &&
      value.decision !== 'complete' &&
      value.decision !== 'blocked'
    ) {
      return null;
    }
    const reason = typeof value.reason === 'string' ? value.reason.slice(0, 1000) : '';
    return { decision: value.decision, reason };
  } catch {
    return null;
  }
}
