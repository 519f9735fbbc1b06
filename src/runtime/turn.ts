import { turnOutcomes } from '../metrics.js';
import type { QueuedTurn, SessionTurns } from '../store/collectTurns.js';
import { commitTurn } from '../store/commitTurn.js';
import { failTurn } from '../store/failTurn.js';
import { claimedContext, readHistory } from '../store/readHistory.js';
import { startAttempt } from '../store/startAttempt.js';
import { LeaseLostError, type BurstRef, type Lease } from '../store/types.js';
import type { Usage } from '../store/usageRows.js';
import { waitForInput } from '../store/waitForInput.js';
import { noTelemetry, type TurnTrace } from '../telemetry/tracing.js';
import { historyBytesFor, modelInfoOf } from './basePrompt.js';
import { askForBudget, budgetExhausted, budgetRefused, toolTimeBefore } from './budget.js';
import type { RuntimeDeps } from './deps.js';
import { closingMessage, type Reply } from './finish.js';
import { foldBurst } from './fold.js';
import { needsGate, runGate } from './gateStep.js';
import { optionEffect } from './optionEffect.js';
import { modelStep } from './modelCall.js';
import { recordCalls } from './recordCalls.js';
import { markResumed } from '../store/markResumed.js';
import { resumeBurst } from './resume.js';
import { breachReason, reserveStep } from './spending.js';
import { settleCalls } from './toolLoop.js';
import { pinnedAgent } from './pinnedAgent.js';
import { offeredTools } from './toolPolicy.js';
import { burstClientTools, offeredClientTool } from '../tools/clientTools.js';
import { askUserTool } from '../tools/registry.js';
import { countBilled } from './usage.js';
import { Watchdog } from './watchdog.js';

/**
 * How one burst ended; the drain loop decides what comes next. Only a lost lease (or the
 * shutdown grace period running out) is thrown: it stops the worker's writes altogether.
 */
export type TurnOutcome =
  /** Committed (a reply or an error). `holding`: more turns are queued, the lease is kept. */
  | { kind: 'finished'; holding: boolean }
  /** A person must answer first; the session was given back. */
  | { kind: 'waiting' }
  /** Something was journaled since the turns were collected: collect again. */
  | { kind: 'changed' }
  /** New input arrived mid-generation: collect it and redo the step. */
  | { kind: 'pivot'; attempt: number; partial: boolean; unbilled: Usage[] }
  /** A cancel was requested: journal `cancelled` (billing `unbilled`). */
  | { kind: 'cancel'; unbilled: Usage[] };

export interface TurnControl {
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
 * Answers one burst of collected turns (below), as one turn run for telemetry: its span
 * begins with the attempt and ends with the outcome, or with what was thrown.
 */
export async function answerBurst(
  deps: RuntimeDeps,
  lease: Lease,
  agentName: string,
  turns: SessionTurns,
  control: TurnControl,
): Promise<TurnOutcome> {
  const trace = (deps.telemetry ?? noTelemetry).turn({
    tenant: lease.tenant,
    sessionId: lease.sessionId,
    agent: agentName,
  });
  try {
    const outcome = await runBurst(deps, lease, agentName, turns, control, trace);
    trace.end({ kind: outcome.kind });
    return outcome;
  } catch (error) {
    const lost = error instanceof LeaseLostError || control.signal.reason instanceof LeaseLostError;
    trace.end({
      kind: 'thrown',
      errorType: lost
        ? 'lease_lost'
        : control.signal.aborted
          ? 'shutdown'
          : error instanceof Error
            ? error.name
            : '_OTHER',
    });
    throw error;
  }
}

/**
 * Answers one burst of collected turns, step by step as RUNTIME.md's drain loop reads:
 * structured inputs, start, gate, fold, then model steps with their tool calls until a
 * reply without calls, which commits with `done`. Each step is one store statement (or
 * none), written here; the steps' logic lives in the files named after them. Every
 * provider call is billed with the statement that closes its step (failed and cancelled
 * ones too).
 */
async function runBurst(
  deps: RuntimeDeps,
  lease: Lease,
  agentName: string,
  turns: SessionTurns,
  control: TurnControl,
  trace: TurnTrace,
): Promise<TurnOutcome> {
  // The claim may have started this burst's attempt already (claimSession): its turns
  // recorded the agent's current stored revision. A directory that has no usable agent by
  // that name (refused, unknown) is not asked for the revision: the turn ends below.
  const claimed = turns.started ?? null;
  const recorded =
    claimed && claimed.agent_revision !== null && deps.agents?.revision?.(lease.tenant, agentName)
      ? claimed.agent_revision
      : null;
  // The revision the burst started with, if it did (runtime/pinnedAgent.ts).
  const pinned = await pinnedAgent(
    deps,
    lease,
    agentName,
    recorded === null
      ? turns.queued
      : turns.queued.map((turn) => ({ ...turn, agent_revision: recorded })),
  );
  const { agent } = pinned;
  const supersede = (agent?.pendingInput ?? 'supersede') === 'supersede';

  // Structured inputs: a person's answers to the saved burst's requests apply first.
  const resumed = await resumeBurst(deps, agent, turns.burst, turns.queued);
  if (resumed.kind === 'waiting') {
    const lastPosition = Math.max(...turns.queued.map((turn) => turn.position));
    await waitForInput(deps.db, lease, { supersede, lastPosition });
    return { kind: 'waiting' };
  }
  const { burst } = resumed;
  if (resumed.resumed) {
    await markResumed(
      deps.db,
      lease,
      burst.steps.flatMap((step) => step.calls.flatMap((call) => call.request_id ?? [])),
    );
  }
  const inBurst = turns.queued.filter((turn) => burst.turn_ids.includes(turn.turn_id));
  const base = turns.queued.filter((turn) => burst.base_turn_ids.includes(turn.turn_id));
  const lead = inBurst[0] as QueuedTurn;
  const ref: BurstRef = {
    turnIds: burst.turn_ids,
    lastPosition: Math.max(...inBurst.map((turn) => turn.position)),
  };

  // Start: `attempt_reset`?, `turn_started`, the turns running, the history read. Resuming
  // after a person answered continues the same attempt; only a new owner of partial
  // output (or a fresh burst) starts a new one.
  // A claim that journaled a revision this worker cannot load (its directory lags an edit
  // the operator's checks refuse, or one whose history is gone) began an attempt that is
  // not the one that runs: it is reset, and the next says which revision it could not keep.
  const restart = claimed !== null && pinned.unpinned !== null;
  let attempt = claimed
    ? claimed.attempt + (restart ? 1 : 0)
    : resumed.resumed && !control.partial
      ? Math.max(control.attempt, 1)
      : control.attempt + 1;
  const history = {
    historyBefore: (base[0] as QueuedTurn).admitted_sequence,
    historyLimit: deps.config.runtime.historyMessages,
    historyBytes: agent ? historyBytesFor(modelInfoOf(deps, agent)) : 0,
    authors: base.map((turn) => turn.author),
  };
  const started =
    claimed && !restart
      ? (claimedContext(claimed.context, history) ??
        (await readHistory(deps.db, {
          sessionId: lease.sessionId,
          tenant: lease.tenant,
          ...history,
        })))
      : await startAttempt(deps.db, lease, {
          turnIds: burst.turn_ids,
          attempt,
          resetPrevious: control.partial || restart,
          seenSequence: turns.last_sequence,
          ...history,
          agent: agentName,
          agentRevision: pinned.revision,
          unpinnedRevision: pinned.unpinned,
        });
  if (started === 'changed') return { kind: 'changed' };
  trace.begin({ turnId: lead.turn_id, turnIds: burst.turn_ids, attempt });

  if (!agent) {
    // A tenant's definition the operator's checks now refuse is never run half-way.
    const refused = deps.agents?.refused?.(lease.tenant, agentName) ?? null;
    const code = refused === null ? 'unknown_agent' : 'agent_refused';
    trace.failed(code);
    await failTurn(deps.db, lease, {
      ...ref,
      code,
      message:
        refused === null
          ? `the agent "${agentName}" is not configured on this server`
          : `the agent "${agentName}" is refused by this server's checks: ${refused}`,
      usage: [],
    });
    turnOutcomes.inc({ outcome: 'error' });
    return { kind: 'finished', holding: true };
  }
  /** Provider calls made but not billed yet: the next statement that closes a step bills them. */
  let unbilled: Usage[] = [...control.unbilled];
  const reply = { ...ref, author: lead.author };
  type Closing = Parameters<typeof commitTurn>[2];
  const commit = async (
    closing: Reply,
    adjust: (message: Closing) => Closing = (message) => message,
  ): Promise<TurnOutcome> => {
    const message = adjust(closingMessage(lease, agent, burst, reply, closing));
    const committed = await commitTurn(deps.db, lease, message);
    // A cancel took the session row first: nothing was written, the cancel journals it.
    if (committed === 'cancelled') return { kind: 'cancel', unbilled: control.unbilled };
    countBilled(lease.tenant, agent.name, closing.usage);
    turnOutcomes.inc({ outcome: 'done' });
    return { kind: 'finished', holding: committed.pending };
  };

  // A pressed option with a state effect is answered by the runtime, without a model call.
  const option = await optionEffect(
    deps.db,
    lease.tenant,
    lease.sessionId,
    agent,
    inBurst,
    resumed.resumed,
  );
  if (option?.kind === 'invalid') {
    trace.failed('invalid_state');
    await failTurn(deps.db, lease, {
      ...ref,
      code: 'invalid_state',
      message: option.message,
      usage: unbilled,
    });
    countBilled(lease.tenant, agent.name, unbilled);
    turnOutcomes.inc({ outcome: 'error' });
    return { kind: 'finished', holding: true };
  }
  if (option) {
    // The fixed reply as written (no completion text), the effect applied with the commit.
    const effect = option.effect;
    return commit(
      { text: option.reply, options: null, usage: unbilled, tail: [], raw: option.reply },
      (message) => ({
        ...message,
        content: option.reply,
        rawContent: null,
        effects: {
          owner: { tenant: lease.tenant, agent: agent.name, user: lead.author },
          list: [...(message.effects?.list ?? []), effect],
        },
        stateBy: 'option',
      }),
    );
  }

  // Gate: a fresh burst of messages only; off topic (or a failed gate: fail-closed), the
  // redirect is the reply.
  if (needsGate(agent, inBurst, resumed.resumed)) {
    const gate = await runGate(deps, agent, burst.lead, inBurst, control.signal, trace);
    if (gate.usage) unbilled.push(gate.usage);
    if (!gate.onTopic) {
      return commit({
        text: agent.gate.redirect,
        options: null,
        usage: unbilled,
        tail: [],
        before: gate.event ? [gate.event] : [],
        raw: agent.gate.redirect,
      });
    }
  }

  // Fold: what the model sees, rebuilt from the burst before every step.
  const prompt = foldBurst(deps, lease, agent, burst, started, base);
  // The agent's tools, and the tools the burst's clients run themselves.
  const own = offeredTools(agent, deps.tools);
  const clientTools = burstClientTools(
    inBurst,
    new Set([...own.map((tool) => tool.name), askUserTool]),
  );
  const tools = [...own, ...[...clientTools.values()].map(offeredClientTool)];
  // One recovery budget for every stall of this burst's steps.
  const watchdog = new Watchdog(deps.config.watchdog, burst.lead);
  const fail = async (code: string, message: string): Promise<TurnOutcome> => {
    trace.failed(code);
    await failTurn(deps.db, lease, { ...ref, code, message, usage: unbilled });
    countBilled(lease.tenant, agent.name, unbilled);
    turnOutcomes.inc({ outcome: 'error' });
    return { kind: 'finished', holding: true };
  };

  for (;;) {
    if (control.cancel.aborted) return { kind: 'cancel', unbilled };
    // Tools: the open calls run (each result saved as it returns), or wait for a person.
    const open = await settleCalls(deps, lease, agent, burst, {
      user: lead.author,
      signal: control.signal,
      watchdog,
      trace,
    });
    // A tool outlived its timeout once more than the watchdog's budget allows.
    if (open === 'stalled') return fail('stalled', watchdog.endMessage('tool'));
    if (open === 'waiting') {
      await waitForInput(deps.db, lease, { supersede, lastPosition: ref.lastPosition });
      return { kind: 'waiting' };
    }
    if (control.cancel.aborted) return { kind: 'cancel', unbilled };

    // Budgets: over budget, ask a person for more or finish with the reason.
    const exhausted = budgetExhausted(burst);
    if (exhausted && agent.budgets.onExhausted === 'ask' && !exhausted.refused) {
      await askForBudget(deps, lease, agent, burst, exhausted.reason, unbilled);
      countBilled(lease.tenant, agent.name, unbilled);
      unbilled = [];
      continue;
    }
    if (exhausted) {
      return commit({
        text: `I stopped here: ${exhausted.reason}.`,
        options: null,
        usage: unbilled,
        tail: [],
      });
    }

    // Spending budgets: the step's worst case is reserved first. Past a limit, ask a
    // person for more (approval tries again), or end the turn with `budget_exhausted`.
    // Most tenants have none: the attempt's start said so, and then nothing runs here.
    const { breaches, toolCalls } = started.budgeted
      ? await reserveStep(deps, lease, agent, burst, {
          prompt: (await prompt({})).prompt,
          attempt,
          offersTools: tools.length > 0,
        })
      : { breaches: [], toolCalls: null };
    if (breaches.length > 0) {
      const reason = breachReason(breaches);
      if (agent.budgets.onExhausted === 'ask' && !budgetRefused(burst)) {
        await askForBudget(deps, lease, agent, burst, reason, unbilled, 'spend');
        countBilled(lease.tenant, agent.name, unbilled);
        unbilled = [];
        continue;
      }
      trace.failed('budget_exhausted');
      await failTurn(deps.db, lease, {
        ...ref,
        code: 'budget_exhausted',
        message: reason,
        usage: unbilled,
        progress: true,
      });
      countBilled(lease.tenant, agent.name, unbilled);
      turnOutcomes.inc({ outcome: 'error' });
      return { kind: 'finished', holding: true };
    }

    // Model step (streaming, with its retries).
    const step = await modelStep(deps, lease, agent, burst, {
      prompt,
      tools,
      turns: inBurst,
      attempt,
      state: control,
      watchdog,
      agentRevision: pinned.revision,
      trace,
    });
    unbilled.push(...step.unbilled);
    // A permanent provider error, retries spent, or the watchdog's budget spent: the turn
    // ends with `error`.
    if (step.kind === 'failed') return fail(step.code, step.message);
    // The broken-off call is billed with the cancel, or with the reply the pivot leads to.
    if (step.kind === 'pivot') return { ...step, unbilled };
    if (step.kind === 'cancel') return { kind: 'cancel', unbilled };
    attempt = step.attempt;
    // The tool time this call follows is billed with it (wall-time budgets).
    const toolMs = toolTimeBefore(burst);
    const own = toolMs > 0 ? { ...step.usage, tool_ms: toolMs } : step.usage;
    const usage = [...unbilled, own];
    unbilled = [];

    // Tool calls: record them (and any requests) with the step, then settle them; past
    // what a tool-call budget left the step, they are denied.
    if (step.result.calls.length > 0) {
      await recordCalls(deps, lease, agent, burst, step.result, usage, step.tail, {
        room: toolCalls,
        clientTools: new Set(clientTools.keys()),
        user: lead.author,
      });
      countBilled(lease.tenant, agent.name, usage);
      continue;
    }

    // Finish: the reply, `done` and the cursor in one token-gated statement.
    return commit({
      text: step.result.text,
      options: step.result.options,
      usage,
      tail: step.tail,
    });
  }
}
