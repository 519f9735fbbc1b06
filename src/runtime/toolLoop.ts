import type { AgentConfig } from '../config/types.js';
import { newRequestId } from '../ids.js';
import { newEvent } from '../protocol/events.js';
import { readCredential } from '../store/readCredential.js';
import { saveBurst, type NewInputRequest } from '../store/saveBurst.js';
import type { BurstCall, BurstState, Lease } from '../store/types.js';
import type { TurnTrace } from '../telemetry/tracing.js';
import { MemoryEffects } from '../tools/memory/effects.js';
import {
  reconcileResolvedTool,
  resolveAgentTools,
  runResolvedTool,
  type ResolvedTool,
} from '../tools/registry.js';
import { callScope } from '../tools/scope.js';
import {
  MAX_RECEIPT_BYTES,
  ToolError,
  type CallReceipt,
  type Credentials,
} from '../tools/types.js';
import { argumentsDigest } from './argumentsDigest.js';
import type { RuntimeDeps } from './deps.js';
import { tookEffect } from './reconciliation.js';
import { isOpen } from './toolPolicy.js';
import { countStall, type Stall, type Watchdog } from './watchdog.js';

/**
 * The tool loop (RUNTIME.md): brings the open calls of a burst forward.
 *
 * - A call found `running` was started by a worker that died: it runs again if its tool
 *   is marked `idempotent`. Otherwise its effect is unknown (reconciliation): the tool's
 *   own `reconcile`, when it has one, says whether it took effect (`done`: the model is
 *   told so, result unknown; `not_done`: it runs again); when it cannot tell, the entry's
 *   `on_unknown` applies: `interrupted` (recorded as such: it may or may not have run) or
 *   `ask` (a `reconciliation` request: a person says whether it happened; resume.ts).
 * - A tool that needs a user's credential it lacks throws NeedsAuthorization: nothing
 *   ran, and the call waits on an `external_auth` request (with the provider's `url`);
 *   once a person names the credential's reference it runs again (resume.ts).
 * - Runnable calls (allowed, approved) run concurrently, at most `tools.max_concurrency`
 *   at once, each under its tool's time limit; a call is saved `running` before it starts,
 *   and its result is saved — with its `tool_result` event and duration — as soon as it
 *   returns, so a crash mid-step resumes with the calls that finished and runs only those
 *   that never started. Saves are serialised (each writes the whole working
 *   conversation); a result's save also marks the next call `running`.
 * - A started tool is not stopped by a cancel: it finishes and its result is recorded.
 * - Tools buffer their side effects (memory) in the burst: the commit applies them.
 * - A call whose tool ignored its signal past its timeout (tools/run.ts `abandoned`) is a
 *   stall for the progress watchdog: journaled with the call's result (which says
 *   `timeout`; the call is not run again, it may have done its work). Once the turn's
 *   stall budget is spent, no further call starts and the burst answers `stalled`: the
 *   turn ends with that error.
 */
export async function settleCalls(
  deps: RuntimeDeps,
  lease: Lease,
  agent: AgentConfig,
  burst: BurstState,
  context: CallContext,
): Promise<'waiting' | 'settled' | 'stalled'> {
  const calls = burst.steps.flatMap((step) => step.calls);
  const resolved = new Map(resolveAgentTools(agent, deps.tools).map((tool) => [tool.name, tool]));
  const requests: NewInputRequest[] = [];
  for (const call of calls.filter((call) => call.status === 'running')) {
    const tool = resolved.get(call.tool);
    if (tool?.idempotent) {
      call.status = 'pending';
      continue;
    }
    const found = tool
      ? await reconcileResolvedTool(tool, call.arguments, {
          signal: context.signal,
          scope: scopeOf(
            deps,
            lease,
            agent,
            context,
            call,
            burst.effects ?? [],
            () => saveBurst(deps.db, lease, burst, {}),
            burst.lead,
          ),
          credentials: credentialsOf(deps, lease, context),
        })
      : 'unknown';
    if (found !== 'unknown') {
      deps.log.info(
        { session_id: lease.sessionId, call_id: call.call_id, tool: call.tool, found },
        'a call interrupted by a crash was reconciled by its tool',
      );
    }
    if (found === 'done') {
      tookEffect(call, "the tool's reconcile check");
    } else if (found === 'not_done') {
      // It did not happen: it runs again, as a fresh call.
      call.status = 'pending';
    } else if (tool?.onUnknown === 'ask') {
      requests.push(askReconciliation(call));
    } else {
      call.status = 'failed';
      call.error = {
        code: 'interrupted',
        message: 'the worker running this tool stopped; it may or may not have run',
      };
    }
  }
  if (requests.length > 0) await saveBurst(deps.db, lease, burst, { requests });
  const queue = calls.filter((call) => call.status === 'pending' || call.status === 'approved');
  if (queue.length > 0) await runCalls(deps, lease, agent, burst, resolved, queue, context);
  const unreported = calls.filter((call) => !call.reported && !isOpen(call));
  if (unreported.length > 0) {
    for (const call of unreported) call.reported = true;
    await saveBurst(deps.db, lease, burst, { events: unreported.map(resultEvent(burst)) });
  }
  if (context.watchdog.ended) return 'stalled';
  return calls.some((call) => call.status === 'awaiting') ? 'waiting' : 'settled';
}

interface CallContext {
  user: string;
  signal: AbortSignal;
  watchdog: Watchdog;
  /** The turn run's span: each call run is an `execute_tool` span under it. */
  trace: TurnTrace;
}

function scopeOf(
  deps: RuntimeDeps,
  lease: Lease,
  agent: AgentConfig,
  context: CallContext,
  call: BurstCall,
  memory: Parameters<typeof callScope>[1]['memory'],
  save: () => Promise<void>,
  turnId: string,
) {
  return {
    ...callScope(deps.config, {
      tenant: lease.tenant,
      agent: agent.name,
      user: context.user,
      sessionId: lease.sessionId,
      callId: call.call_id,
      turnId,
      memory,
    }),
    receipt: receiptOf(call, save),
  };
}

/** The call's receipt: recorded on the call, durable once the burst holding it is saved. */
function receiptOf(call: BurstCall, save: () => Promise<void>): CallReceipt {
  return {
    get value() {
      return call.receipt ?? null;
    },
    async record(value) {
      const json = JSON.stringify(value);
      if (Buffer.byteLength(json) > MAX_RECEIPT_BYTES) {
        throw new ToolError('too_large', `a receipt holds at most ${MAX_RECEIPT_BYTES} bytes`);
      }
      call.receipt = JSON.parse(json) as Record<string, unknown>;
      await save();
    },
  };
}

/** The turn's user's credential references, read when a tool asks for one. */
function credentialsOf(deps: RuntimeDeps, lease: Lease, context: CallContext): Credentials {
  return {
    get: (provider) =>
      readCredential(deps.db, { tenant: lease.tenant, user: context.user, provider }),
  };
}

/** The call waits for a person to say whether it took effect. */
function askReconciliation(call: BurstCall): NewInputRequest {
  call.status = 'awaiting';
  call.kind = 'reconciliation';
  call.request_id = newRequestId();
  return {
    request_id: call.request_id,
    call_id: call.call_id,
    kind: 'reconciliation',
    tool: call.tool,
    arguments: call.arguments,
    prompt: 'Did this call take effect?',
    deadline_at: null,
    on_timeout: 'reject',
    arguments_digest: argumentsDigest(call.arguments),
    human_only: false,
    nudges: [],
  };
}

/** The call waits for a person to grant the tool access to a third party. */
function askAuthorization(
  call: BurstCall,
  user: string,
  authorization: { provider: string; url: string; scope: string | null },
): NewInputRequest {
  call.status = 'awaiting';
  call.kind = 'external_auth';
  call.request_id = newRequestId();
  delete call.error;
  delete call.duration_ms;
  const scope = authorization.scope === null ? '' : ` (${authorization.scope})`;
  return {
    request_id: call.request_id,
    call_id: call.call_id,
    kind: 'external_auth',
    tool: call.tool,
    arguments: call.arguments,
    prompt: `The tool ${call.tool} needs access to ${authorization.provider}${scope}. Grant it at the link, then answer with the credential's reference.`,
    deadline_at: null,
    on_timeout: 'reject',
    arguments_digest: argumentsDigest(call.arguments),
    human_only: false,
    nudges: [],
    authorization,
    user_name: user,
  };
}

function resultEvent(burst: BurstState) {
  return (call: BurstCall) =>
    newEvent('tool_result', burst.lead, {
      call_id: call.call_id,
      tool: call.tool,
      ok: call.status === 'done',
      ...(call.status === 'done' ? { result: call.result ?? null } : { error: call.error }),
      ...(call.duration_ms === undefined ? {} : { duration_ms: call.duration_ms }),
    });
}

async function runCalls(
  deps: RuntimeDeps,
  lease: Lease,
  agent: AgentConfig,
  burst: BurstState,
  resolved: Map<string, ResolvedTool>,
  queue: BurstCall[],
  context: CallContext,
): Promise<void> {
  const { tools } = deps.config;
  const memory = new MemoryEffects(burst.effects ?? []);
  let saving: Promise<void> = Promise.resolve();
  const credentials = credentialsOf(deps, lease, context);
  /** Saves are chained: each writes the whole burst as it is when its turn comes. */
  const save = (
    events: BurstCall[] = [],
    stall: Stall | null = null,
    requests: NewInputRequest[] = [],
  ) => {
    saving = saving.then(async () => {
      burst.effects = memory.list();
      for (const call of events) call.reported = true;
      await saveBurst(deps.db, lease, burst, {
        events: [...events.map(resultEvent(burst)), ...(stall ? [stall.event] : [])],
        requests,
      });
      if (stall) countStall(stall);
    });
    return saving;
  };
  const waiting = [...queue];
  const first = waiting.splice(0, Math.max(1, tools.maxConcurrency));
  for (const call of first) call.status = 'running';
  await save();

  const run = async (call: BurstCall): Promise<void> => {
    const tool = resolved.get(call.tool);
    const span = context.trace.tool({
      tool: call.tool,
      callId: call.call_id,
      arguments: call.arguments,
    });
    const outcome = tool
      ? await runResolvedTool(tool, call.arguments, {
          signal: context.signal,
          scope: scopeOf(deps, lease, agent, context, call, memory, () => save(), burst.lead),
          maxResultBytes: tools.maxResultBytes,
          credentials,
        })
      : {
          ok: false as const,
          error: { code: 'unknown_tool' as const, message: `no tool named ${call.tool}` },
          durationMs: 0,
        };
    span.end(outcome);
    if (outcome.ok) {
      call.status = 'done';
      call.result = outcome.result;
    } else {
      call.status = 'failed';
      call.error = outcome.error;
    }
    if (outcome.durationMs !== undefined) call.duration_ms = outcome.durationMs;
    // Access to a third party is missing: nothing ran; the call waits for a person.
    const authorization = outcome.authorization
      ? askAuthorization(call, context.user, outcome.authorization)
      : null;
    const stall =
      outcome.abandoned && context.watchdog.enabled
        ? context.watchdog.decide('tool', outcome.durationMs ?? 0, {
            call_id: call.call_id,
            tool: call.tool,
          })
        : null;
    if (stall) {
      deps.log.warn(
        { session_id: lease.sessionId, tool: call.tool, action: stall.action },
        'tool call stalled past its timeout',
      );
    }
    // Once the stall budget is spent, calls that have not started never do.
    const next = context.watchdog.ended ? undefined : waiting.shift();
    if (next) next.status = 'running';
    await save(authorization ? [] : [call], stall, authorization ? [authorization] : []);
    if (next) await run(next);
  };
  await Promise.all(first.map(run));
  await saving;
}
