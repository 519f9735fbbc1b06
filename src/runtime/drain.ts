import type { LanguageModelV3Prompt } from '@ai-sdk/provider';
import { newMessageId } from '../ids.js';
import { foldInputs } from '../providers/foldedPrompt.js';
import { priceUsage } from '../providers/registry.js';
import { collectInputs, type PendingInput } from '../store/collectInputs.js';
import { commitTurn, failTurn, type Usage } from '../store/finishTurn.js';
import { recentMessages } from '../store/listMessages.js';
import { parkSession } from '../store/parkSession.js';
import { releaseLease } from '../store/releaseLease.js';
import { startAttempt } from '../store/startAttempt.js';
import { LeaseLostError, type Lease, type SessionRow } from '../store/types.js';
import { turnOutcomes } from '../metrics.js';
import { abortableDelay } from './abortable.js';
import { DeltaBuffer } from './deltaBuffer.js';
import type { RuntimeDeps } from './deps.js';
import { startHeartbeat } from './heartbeat.js';
import { backoffMs, ProviderFailure, streamStep, type StepResult } from './modelStep.js';

/** The most inputs folded into one burst; the rest wait for the next iteration. */
const maxBurst = 50;
/**
 * Pivots allowed in a row: a user who keeps typing must not keep the agent from ever
 * answering. Past this, new input waits for the next burst.
 */
const maxPivots = 3;

type BurstOutcome = { pivoted: false } | { pivoted: true; attempt: number; partial: boolean };

/**
 * The drain loop for one claimed session (RUNTIME.md, "One iteration of the drain loop"):
 * collect the pending inputs, answer them as one burst, repeat until none are left, then
 * release the lease. `shutdown` stops it between bursts; `abort` (lease lost, or the
 * shutdown grace period ran out) aborts the provider stream at once.
 */
export async function drainSession(
  deps: RuntimeDeps,
  session: SessionRow,
  control: { shutdown: AbortSignal; hardStop: AbortSignal },
): Promise<void> {
  const lease: Lease = {
    sessionId: session.session_id,
    tenant: session.tenant,
    token: session.lease_token as string,
  };
  const log = deps.log.child({ session_id: lease.sessionId });
  const { runtime } = deps.config;
  if (session.claim_count > runtime.parkAfterAttempts) {
    const parked = await parkSession(deps.db, lease, { claims: session.claim_count - 1 });
    turnOutcomes.inc({ outcome: 'parked' }, parked.turnIds.length);
    log.error({ claims: session.claim_count - 1, turn_ids: parked.turnIds }, 'session parked');
    return;
  }
  const abort = new AbortController();
  const onHardStop = () => abort.abort(new Error('shutdown grace period over'));
  control.hardStop.addEventListener('abort', onHardStop, { once: true });
  const heartbeat = startHeartbeat({
    db: deps.db,
    lease,
    heartbeatMs: runtime.heartbeatMs,
    ttlMs: runtime.leaseTtlMs,
    log,
    onLost: (error) => abort.abort(error),
  });
  let partial = session.partial_output;
  let attempt = session.attempt;
  let pivots = 0;
  try {
    while (!control.shutdown.aborted) {
      const inputs = await collectInputs(deps.db, lease.sessionId, maxBurst);
      if (inputs.length === 0) break;
      const outcome = await answerBurst(deps, lease, session.agent, inputs, {
        attempt,
        partial,
        signal: abort.signal,
        allowPivot: pivots < maxPivots,
      });
      if (outcome.pivoted) {
        // New input arrived mid-generation: redo the step with it folded in.
        pivots += 1;
        attempt = outcome.attempt;
        partial = outcome.partial;
        continue;
      }
      pivots = 0;
      attempt = 0;
      partial = false;
    }
    await releaseLease(deps.db, lease);
  } catch (error) {
    if (error instanceof LeaseLostError || abort.signal.reason instanceof LeaseLostError) {
      log.warn('lease lost; abandoning the turn to its new owner');
      turnOutcomes.inc({ outcome: 'lease_lost' });
      return;
    }
    log.error({ err: describeError(error) }, 'turn failed unexpectedly; releasing the lease');
    await releaseLease(deps.db, lease).catch(() => {});
  } finally {
    heartbeat.stop();
    control.hardStop.removeEventListener('abort', onHardStop);
  }
}

async function answerBurst(
  deps: RuntimeDeps,
  lease: Lease,
  agentName: string,
  inputs: PendingInput[],
  state: { attempt: number; partial: boolean; signal: AbortSignal; allowPivot: boolean },
): Promise<BurstOutcome> {
  const { runtime } = deps.config;
  const turnIds = inputs.map((input) => input.turn_id);
  const lead = turnIds[0] as string;
  const burst = { turnIds, lastPosition: (inputs[inputs.length - 1] as PendingInput).position };
  let attempt = state.attempt + 1;
  await startAttempt(deps.db, lease, { turnIds, attempt, resetPrevious: state.partial });

  const agent = deps.config.agents[agentName];
  if (!agent) {
    await failTurn(deps.db, lease, {
      ...burst,
      code: 'unknown_agent',
      message: `the agent "${agentName}" is not configured on this server`,
      usage: [],
    });
    turnOutcomes.inc({ outcome: 'error' });
    return { pivoted: false };
  }
  const modelName = `${agent.model.provider}/${agent.model.modelId}`;
  const model = deps.resolveModel(agent.model.provider, agent.model.modelId);
  const first = inputs[0] as PendingInput;
  const history = await recentMessages(
    deps.db,
    lease.sessionId,
    first.admitted_sequence,
    runtime.historyMessages,
  );
  const prompt: LanguageModelV3Prompt = [
    { role: 'system', content: agent.instructions },
    ...history.map((message) =>
      message.role === 'assistant'
        ? {
            role: 'assistant' as const,
            content: [{ type: 'text' as const, text: message.content }],
          }
        : { role: 'user' as const, content: [{ type: 'text' as const, text: message.content }] },
    ),
    {
      role: 'user',
      content: [
        {
          type: 'text',
          text: foldInputs(inputs.map(({ author, content }) => ({ author, content }))),
        },
      ],
    },
  ];

  for (let call = 1; ; call++) {
    const buffer = new DeltaBuffer(
      deps.db,
      lease,
      lead,
      { batchMs: runtime.deltaBatchMs, batchBytes: runtime.deltaBatchBytes },
      () => {},
    );
    let result: StepResult;
    const pivot = watchForNewInput(deps, lease, inputs, state.allowPivot);
    try {
      result = await streamStep(
        model,
        prompt,
        buffer,
        AbortSignal.any([state.signal, pivot.signal]),
      );
    } catch (error) {
      await buffer.settle();
      if (pivot.signal.aborted && !state.signal.aborted) {
        return { pivoted: true, attempt, partial: buffer.wroteText };
      }
      if (!(error instanceof ProviderFailure)) throw error;
      const retry = error.isRetryable && call < runtime.retryAttempts;
      deps.log.warn(
        { session_id: lease.sessionId, status: error.statusCode, call, retry },
        'model call failed',
      );
      if (!retry) {
        await failTurn(deps.db, lease, {
          ...burst,
          code: error.isRetryable ? 'provider_unavailable' : 'provider_error',
          message: error.isRetryable
            ? `the model provider did not answer after ${call} attempts`
            : 'the model provider refused the request',
          usage: [],
        });
        turnOutcomes.inc({ outcome: 'error' });
        return { pivoted: false };
      }
      await abortableDelay(backoffMs(runtime.retryBaseMs, call, deps.random), state.signal);
      if (state.signal.aborted) throw state.signal.reason;
      if (buffer.wroteText) {
        // Clients saw part of this call's text: tell them to drop it before the retry.
        attempt += 1;
        await startAttempt(deps.db, lease, { turnIds, attempt, resetPrevious: true });
      }
      continue;
    } finally {
      pivot.stop();
    }
    const usage: Usage = {
      input_tokens: result.inputTokens,
      output_tokens: result.outputTokens,
      cost_usd: priceUsage(deps.config, modelName, result),
      model: modelName,
      latency_ms: result.latencyMs,
    };
    await commitTurn(deps.db, lease, {
      ...burst,
      messageId: newMessageId(),
      author: agent.name,
      content: result.text,
      usage: [usage],
    });
    turnOutcomes.inc({ outcome: 'done' });
    return { pivoted: false };
  }
}

/**
 * Aborts the current model step when an input newer than the burst is admitted to this
 * session ("pivot", RUNTIME.md). Only the wake-up is watched: a lost one means the new
 * input is answered in the next burst instead, which is slower but still correct.
 */
function watchForNewInput(
  deps: RuntimeDeps,
  lease: Lease,
  inputs: PendingInput[],
  enabled: boolean,
): { signal: AbortSignal; stop: () => void } {
  const controller = new AbortController();
  if (!enabled) return { signal: controller.signal, stop: () => {} };
  const newest = (inputs[inputs.length - 1] as PendingInput).admitted_sequence;
  const unsubscribe = deps.wakeups.subscribe((wakeup) => {
    if (
      wakeup.kind === 'input' &&
      wakeup.sessionId === lease.sessionId &&
      wakeup.sequence > newest
    ) {
      controller.abort(new Error('pivot'));
    }
  });
  return { signal: controller.signal, stop: unsubscribe };
}

function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
