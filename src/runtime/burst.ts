import { agentFor } from '../agents/lookup.js';
import type { AgentConfig } from '../config/types.js';
import { newMessageId, newRequestId } from '../ids.js';
import { turnOutcomes } from '../metrics.js';
import type { NewEvent } from '../protocol/events.js';
import type { QueuedTurn, SessionTurns } from '../store/collectTurns.js';
import { commitTurn, type BurstRef, type Usage } from '../store/commitTurn.js';
import { failTurn } from '../store/failTurn.js';
import { startAttempt } from '../store/startAttempt.js';
import type { BurstState, Lease } from '../store/types.js';
import { waitForInput } from '../store/waitForInput.js';
import { basePrompt, historyBytesFor, modelInfoOf } from './basePrompt.js';
import type { RuntimeDeps } from './deps.js';
import { needsGate, runGate } from './gateStep.js';
import { modelStep, type PromptOptions } from './modelCall.js';
import { continuePrompt, offeredTools, replyText } from './steps.js';
import { askForBudget, budgetExhausted, recordCalls, resumeBurst } from './toolCalls.js';
import { settleCalls } from './toolLoop.js';
import { countBilled } from './usage.js';

export type BurstOutcome =
  /** `holding`: the commit kept the lease because more turns are queued. */
  | { kind: 'finished'; holding: boolean }
  | { kind: 'waiting' }
  /** `unbilled`: provider calls to bill with whatever closes the turn next. */
  | { kind: 'pivot'; attempt: number; partial: boolean; unbilled: Usage[] }
  | { kind: 'cancel'; unbilled: Usage[] };

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
  /** Provider calls of an earlier try at this burst (a pivot) not billed yet. */
  unbilled: Usage[];
}

/**
 * Answers one burst (RUNTIME.md, the drain loop's body): `turn_started`; the scope gate
 * for a fresh burst of messages; then model steps until a reply without tool calls, which
 * is committed with `done` in one token-gated statement. Tool calls follow the agent's
 * policy (steps.ts, toolCalls.ts, toolLoop.ts); a call that needs a person stops the turn
 * (`waiting`) until an answer makes the session claimable again, and the working
 * conversation is saved on the session row between steps. Every provider call is billed
 * with the statement that closes its step (failed and cancelled ones too). Returns early
 * on a pivot or a cancel; throws when the lease is lost.
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
    historyBytes: agent ? historyBytesFor(modelInfoOf(deps, agent)) : 0,
  });

  if (!agent) {
    // A tenant's definition the operator's checks now refuse is never run half-way.
    const refused = deps.agents?.refused?.(lease.tenant, agentName) ?? null;
    await failTurn(deps.db, lease, {
      ...ref,
      code: refused === null ? 'unknown_agent' : 'agent_refused',
      message:
        refused === null
          ? `the agent "${agentName}" is not configured on this server`
          : `the agent "${agentName}" is refused by this server's checks: ${refused}`,
      usage: [],
    });
    turnOutcomes.inc({ outcome: 'error' });
    return { kind: 'finished', holding: true };
  }
  const turn = { deps, lease, agent, burst, ref, lead: inBurst[0] as QueuedTurn };
  /** Provider calls made but not billed yet: the next statement that closes a step bills them. */
  let unbilled: Usage[] = [...state.unbilled];

  if (needsGate(agent, inBurst, resumed.resumed)) {
    const gate = await runGate(deps, agent, burst.lead, inBurst, state.signal);
    if (gate.usage) unbilled.push(gate.usage);
    if (!gate.onTopic) {
      // Off topic (or the gate failed: it is fail-closed): the redirect is the reply.
      return finish(turn, {
        text: agent.gate.redirect,
        options: null,
        usage: unbilled,
        tail: [],
        before: gate.event ? [gate.event] : [],
        raw: agent.gate.redirect,
      });
    }
  }

  const prompts = new Map<string, Promise<Awaited<ReturnType<typeof basePrompt>>>>();
  const prompt = async (options: PromptOptions) => {
    const key = `${options.tighter === true}:${options.withoutImages === true}`;
    let built = prompts.get(key);
    if (!built)
      prompts.set(key, (built = basePrompt(deps, lease, agent, started.history, base, options)));
    const { prompt: start, imagesSent } = await built;
    return { prompt: continuePrompt(start, burst), images: imagesSent };
  };
  const tools = offeredTools(agent, deps.tools);

  for (;;) {
    if (state.cancel.aborted) return { kind: 'cancel', unbilled };
    const open = await settleCalls(deps, lease, agent, burst, {
      user: turn.lead.author,
      signal: state.signal,
    });
    if (open === 'waiting') {
      await waitForInput(deps.db, lease, { supersede, lastPosition: ref.lastPosition });
      return { kind: 'waiting' };
    }
    if (state.cancel.aborted) return { kind: 'cancel', unbilled };
    const exhausted = budgetExhausted(burst);
    if (exhausted) {
      if (agent.budgets.onExhausted === 'ask' && !exhausted.refused) {
        await askForBudget(deps, lease, burst, exhausted.reason);
        continue;
      }
      return finish(turn, {
        text: `I stopped here: ${exhausted.reason}.`,
        options: null,
        usage: unbilled,
        tail: [],
      });
    }

    const step = await modelStep(deps, lease, agent, burst, {
      prompt,
      tools,
      turns: inBurst,
      attempt,
      state,
    });
    unbilled.push(...step.unbilled);
    if (step.kind === 'failed') {
      await failTurn(deps.db, lease, {
        ...ref,
        code: step.code,
        message: step.message,
        usage: unbilled,
      });
      countBilled(lease.tenant, agent.name, unbilled);
      turnOutcomes.inc({ outcome: 'error' });
      return { kind: 'finished', holding: true };
    }
    // A pivot or a cancel: the broken-off call is billed with the cancel, or with the
    // reply the pivot leads to (the drain loop passes it on).
    if (step.kind === 'pivot') return { ...step, unbilled };
    if (step.kind === 'cancel') return { kind: 'cancel', unbilled };
    attempt = step.attempt;
    const usage = [...unbilled, step.usage];
    unbilled = [];
    if (step.result.calls.length > 0) {
      await recordCalls(deps, lease, agent, burst, step.result, usage, step.tail);
      countBilled(lease.tenant, agent.name, usage);
      continue;
    }
    return finish(turn, {
      text: step.result.text,
      options: step.result.options,
      usage,
      tail: step.tail,
    });
  }
}

async function finish(
  turn: {
    deps: RuntimeDeps;
    lease: Lease;
    agent: AgentConfig;
    burst: BurstState;
    ref: BurstRef;
    lead: QueuedTurn;
  },
  reply: {
    text: string;
    options: string[] | null;
    usage: Usage[];
    tail: NewEvent[];
    before?: NewEvent[];
    /** The reply as written, when it is not the model's (the gate's redirect). */
    raw?: string;
  },
): Promise<BurstOutcome> {
  const { deps, lease, agent, burst } = turn;
  const text = reply.raw ?? replyText(burst, reply.text);
  const committed = await commitTurn(deps.db, lease, {
    ...turn.ref,
    messageId: newMessageId(),
    author: agent.name,
    content: agent.completionText ?? text,
    rawContent: agent.completionText === null ? null : text,
    options: reply.options ? { request_id: newRequestId(), choices: reply.options } : null,
    usage: reply.usage,
    tail: reply.tail,
    before: reply.before ?? [],
    effects: {
      owner: { tenant: lease.tenant, agent: agent.name, user: turn.lead.author },
      list: burst.effects ?? [],
    },
  });
  countBilled(lease.tenant, agent.name, reply.usage);
  turnOutcomes.inc({ outcome: 'done' });
  return { kind: 'finished', holding: committed.pending };
}
