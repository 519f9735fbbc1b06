import type { CallUsage } from '../providers/forcedCall.js';
import type { ProviderFailure } from '../providers/failure.js';
import { priceUsage } from '../providers/registry.js';
import type { ExecutionRow } from '../store/getExecution.js';
import { recordUsage } from '../store/recordUsage.js';
import { abortableDelay } from '../time/abortable.js';
import { retryDelayMs } from '../time/backoff.js';
import type { ExecutionDeps } from './deps.js';
import { iterationTurnId } from './iteration.js';
import { noTelemetry, structuredReply } from '../telemetry/tracing.js';

const noTokens = { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0 };

/** One forced structured call's answer (providers/evaluator.ts, providers/approvalDecision.ts). */
export type ForcedAnswer =
  | { kind: 'decided'; usage: CallUsage | null }
  | { kind: 'garbage'; why: string; usage: CallUsage | null }
  | { kind: 'failed'; failure: ProviderFailure; usage: CallUsage | null };

/** How the retries ended: a decision, too many answers outside the schema, or a failure. */
export type ForcedCallOutcome<Answer extends ForcedAnswer> =
  | Extract<Answer, { kind: 'decided' }>
  | { kind: 'garbage'; why: string }
  /** Not retryable, or retryable and `runtime.retry_attempts` calls spent. */
  | { kind: 'failed'; failure: ProviderFailure; calls: number };

/** Answers outside the schema allowed in a row before giving up: the first is retried once. */
export const maxGarbage = 2;

/**
 * A forced structured call made for an execution, retried as a model step is: a transient
 * provider failure with backoff (`retryDelayMs`) up to `runtime.retry_attempts` calls, an
 * answer outside the schema until `maxGarbage` in a row. Every call that reports usage is
 * billed to the execution's iteration turn, under `purpose`, by `agent`'s model, before
 * `onCall` sees the answer. An abort during a backoff throws the signal's reason.
 */
export async function forcedCallWithRetries<Answer extends ForcedAnswer>(
  deps: ExecutionDeps,
  execution: ExecutionRow,
  billing: {
    agent: { name: string; model: { provider: string; modelId: string } };
    purpose: 'evaluation' | 'approval';
  },
  call: () => Promise<Answer>,
  options: {
    signal: AbortSignal;
    /** Answers outside the schema already counted (an evaluation's persist across leases). */
    garbageSoFar?: number;
    onCall?: (answer: Answer, garbage: number) => void;
  },
): Promise<ForcedCallOutcome<Answer>> {
  const { runtime } = deps.config;
  let garbage = options.garbageSoFar ?? 0;
  for (let calls = 1; ; calls++) {
    const traced = (deps.telemetry ?? noTelemetry).structuredCall({
      tenant: execution.tenant,
      sessionId: execution.session_id,
      turnId: iterationTurnId(execution.execution_id, execution.iteration),
      agent: billing.agent.name,
      provider: billing.agent.model.provider,
      model: billing.agent.model.modelId,
      purpose: billing.purpose,
    });
    const answer = await call();
    const costUsd = await bill(deps, execution, billing, answer.usage, answer.kind === 'decided');
    if (answer.kind === 'failed') traced.fail(answer.failure.code);
    else if (answer.kind === 'garbage') traced.fail('answer_outside_schema');
    else traced.end(structuredReply({ ...(answer.usage ?? noTokens), costUsd }));
    if (answer.kind === 'garbage') garbage += 1;
    options.onCall?.(answer, garbage);
    if (answer.kind === 'decided') return answer as Extract<Answer, { kind: 'decided' }>;
    if (answer.kind === 'garbage') {
      deps.log.warn(
        {
          execution_id: execution.execution_id,
          purpose: billing.purpose,
          why: answer.why,
          garbage,
        },
        'forced call answered outside the schema',
      );
      if (garbage >= maxGarbage) return { kind: 'garbage', why: answer.why };
      continue;
    }
    const failure = answer.failure;
    if (!failure.isRetryable || calls >= runtime.retryAttempts) {
      return { kind: 'failed', failure, calls };
    }
    await abortableDelay(
      retryDelayMs(failure, runtime.retryBaseMs, calls, deps.random),
      options.signal,
    );
    if (options.signal.aborted) throw options.signal.reason;
  }
}

async function bill(
  deps: ExecutionDeps,
  execution: ExecutionRow,
  billing: {
    agent: { name: string; model: { provider: string; modelId: string } };
    purpose: 'evaluation' | 'approval';
  },
  usage: CallUsage | null,
  ok: boolean,
): Promise<number> {
  if (!usage) return 0;
  const model = `${billing.agent.model.provider}/${billing.agent.model.modelId}`;
  const costUsd = priceUsage(deps.config, model, usage);
  await recordUsage(deps.db, [
    {
      tenant: execution.tenant,
      sessionId: execution.session_id,
      turnId: iterationTurnId(execution.execution_id, execution.iteration),
      agent: billing.agent.name,
      model,
      purpose: billing.purpose,
      outcome: ok ? 'ok' : 'failed',
      inputTokens: usage.inputTokens,
      outputTokens: usage.outputTokens,
      cachedInputTokens: usage.cachedInputTokens,
      reasoningTokens: usage.reasoningTokens,
      costUsd,
      latencyMs: usage.latencyMs,
      ttftMs: null,
    },
  ]);
  return costUsd;
}
