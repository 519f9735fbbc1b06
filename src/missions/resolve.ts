import type { AgentConfig } from '../config/types.js';
import { isParleyError } from '../errors.js';
import { decideApproval } from '../providers/approvalDecision.js';
import { isSpendingRequest } from '../protocol/inbox.js';
import { answerInput } from '../store/answerInput.js';
import { declineInput } from '../store/declineInput.js';
import type { ExecutionRow } from '../store/getExecution.js';
import { readTurnOutcome, type PendingRequest } from '../store/readTurnOutcome.js';
import { isHumanOnly } from '../tools/humanOnly.js';
import type { ExecutionDeps } from './deps.js';
import { forcedCallWithRetries } from './forcedCallRetry.js';
import { admitAs, resolverTurnId } from './iteration.js';

/**
 * Agent-to-agent resolution: an execution routed to `agent:NAME` has its requests answered
 * by that agent — under the same approver policy as a person:
 *
 * - The answering agent may answer only if the requesting agent's `approver_roles` names
 *   `agent:NAME` (null admits people only), and never an approval of a `human_only` tool
 *   (`tools.human_only`, or the entry's own). Otherwise the request is *declined*: it stays
 *   pending and goes to people (the execution's own user's inbox; an admin may answer).
 * - An approval (or a budget extension) is decided through a forced `record_approval
 *   {approved, reason}` call with the agent's instructions (providers/approvalDecision.ts),
 *   never from free text. An answer outside the schema is retried once, a transient
 *   provider failure with backoff; then it is a rejection: nothing is approved by default.
 * - A question is posted as a turn into the agent's own session (`exec.ID.REQUEST`, so a
 *   retry posts it once) and its reply is the answer.
 *
 * The answer is journaled like a person's (`input_resolved`, the agent as the actor, its
 * response — the decision's reason — included). Answering is single-use: a retry after a
 * crash meets `stale_input` and does nothing. Returns the execution's answering sessions
 * (agent → session), which may have grown.
 */
export async function resolveByAgent(
  deps: ExecutionDeps,
  execution: ExecutionRow,
  target: string,
  requests: PendingRequest[],
  signal: AbortSignal,
): Promise<Record<string, string>> {
  const resolvers = { ...execution.resolvers };
  const requester = deps.agents.get(execution.tenant, execution.agent);
  const actor = `agent:${target}`;
  for (const request of requests) {
    const refusal = mayNotAnswer(deps, requester, actor, request);
    if (refusal !== null) {
      if (
        await declineInput(deps.db, {
          tenant: execution.tenant,
          requestId: request.request_id,
          declinedBy: actor,
        })
      ) {
        deps.log.info(
          { execution_id: execution.execution_id, request_id: request.request_id, why: refusal },
          'an agent may not answer this request: it goes to people',
        );
      }
      continue;
    }
    let answer: { approved: boolean; response: Record<string, unknown> } | null;
    if (request.kind === 'question') {
      answer = await askByTurn(deps, execution, target, request, resolvers);
    } else {
      answer = await decide(deps, execution, target, request, signal);
    }
    if (answer === null) continue;
    try {
      await answerInput(deps.db, {
        tenant: execution.tenant,
        sessionId: execution.session_id,
        requestId: request.request_id,
        expectedSequence: request.expected_sequence,
        approved: answer.approved,
        response: answer.response,
        actor: { user: actor, tenant: execution.tenant },
        journalResponse: true,
        // The same rule again, against the session's agent, inside the answer's transaction.
        mayAnswer: (agent) =>
          mayNotAnswer(deps, deps.agents.get(execution.tenant, agent), actor, request) === null,
      });
    } catch (error) {
      // Answered already (a retry after a crash), or expired by a cancel: nothing to do.
      if (!isParleyError(error) || error.code !== 'stale_input') throw error;
    }
  }
  return resolvers;
}

/** Why `actor` may not answer this request of `requester`, or null when it may. */
function mayNotAnswer(
  deps: ExecutionDeps,
  requester: AgentConfig | undefined,
  actor: string,
  request: PendingRequest,
): string | null {
  if (!requester) return 'the requesting agent is not available';
  // Raising a spending budget is an admin's decision (governance.md), never an agent's.
  if (isSpendingRequest(request)) return 'a spending budget goes to its admins';
  // Whether a call took effect, and a user's credential, are a person's to say.
  if (request.kind === 'reconciliation' || request.kind === 'external_auth') {
    return `a ${request.kind} request goes to people`;
  }
  if (requester.approverRoles === null || !requester.approverRoles.includes(actor)) {
    return `the agent ${requester.name}'s approver_roles do not name ${actor}`;
  }
  if (
    request.kind === 'approval' &&
    request.tool !== null &&
    isHumanOnly(requester, request.tool, deps.config.tools.humanOnly)
  ) {
    return `the tool ${request.tool} is human_only`;
  }
  return null;
}

/** A question: a turn in the answering agent's own session; null while it runs. */
async function askByTurn(
  deps: ExecutionDeps,
  execution: ExecutionRow,
  target: string,
  request: PendingRequest,
  resolvers: Record<string, string>,
): Promise<{ approved: boolean; response: Record<string, unknown> } | null> {
  const turnId = resolverTurnId(execution.execution_id, request.request_id);
  const admitted = await admitAs(deps, execution, {
    sessionId: Object.hasOwn(resolvers, target) ? (resolvers[target] as string) : null,
    agent: target,
    turnId,
    message: requestMessage(execution, request),
  });
  resolvers[target] = admitted.session_id;
  const outcome = await readTurnOutcome(deps.db, admitted.session_id, turnId);
  if (outcome.kind === 'pending' || outcome.kind === 'waiting' || outcome.kind === 'missing') {
    return null;
  }
  if (outcome.kind !== 'done') {
    return { approved: false, response: { reason: `the agent ${target} could not answer` } };
  }
  return { approved: true, response: { answer: outcome.content.trim() } };
}

/**
 * An approval or a budget extension: the answering agent's forced structured decision.
 * Failing to decide is a rejection that says why.
 */
async function decide(
  deps: ExecutionDeps,
  execution: ExecutionRow,
  target: string,
  request: PendingRequest,
  signal: AbortSignal,
): Promise<{ approved: boolean; response: Record<string, unknown> }> {
  const reject = (reason: string) => ({ approved: false, response: { reason } });
  const agent = deps.agents.get(execution.tenant, target);
  if (!agent) return reject(`the agent ${target} is not available`);
  const model = deps.resolveModel(agent.model.provider, agent.model.modelId);
  const outcome = await forcedCallWithRetries(
    deps,
    execution,
    { agent, purpose: 'approval' },
    () =>
      decideApproval(model, {
        instructions: agent.instructions,
        request: requestMessage(execution, request),
        timeoutMs: deps.config.runtime.evaluationTimeoutMs,
        signal,
      }),
    { signal },
  );
  if (outcome.kind === 'decided') {
    return { approved: outcome.approved, response: { reason: outcome.reason } };
  }
  if (outcome.kind === 'garbage') {
    return reject(`the agent ${target} gave no valid decision (${outcome.why})`);
  }
  return reject(`the agent ${target} could not answer (${outcome.failure.code})`);
}

function requestMessage(execution: ExecutionRow, request: PendingRequest): string {
  const who = `The agent "${execution.agent}" working on the mission "${execution.mission}" (execution ${execution.execution_id})`;
  if (request.kind === 'question') {
    return `${who} asks you: ${request.prompt ?? '(no question text)'}\nReply with your answer only.`;
  }
  if (request.kind === 'budget_extension') {
    return `${who} asks to continue past its budget (${request.prompt ?? 'budget used up'}).`;
  }
  return `${who} asks for your approval to call the tool ${request.tool ?? '?'} with these arguments: ${JSON.stringify(request.arguments)}`;
}
