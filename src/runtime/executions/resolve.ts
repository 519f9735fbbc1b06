import { isParleyError } from '../../errors.js';
import { answerInput } from '../../store/answerInput.js';
import type { ExecutionRow } from '../../store/getExecution.js';
import { readTurnOutcome, type PendingRequest } from '../../store/readTurnOutcome.js';
import type { ExecutionDeps } from './deps.js';
import { admitAs, resolverTurnId } from './iteration.js';

/**
 * Seed 003's agent-to-agent resolution: an execution routed to `agent:NAME` has its
 * approvals and questions answered by that agent, in that agent's own session. Each request
 * is posted there as a turn (through the public admission, id `exec.ID.REQUEST`, so a
 * retry posts it once); once that turn is done, its reply is journaled as the answer with
 * the agent as the actor, exactly like a person's. An approval needs a reply that starts
 * with APPROVE (or YES); anything else, or an agent that failed to answer, is a rejection
 * that quotes the reply: a request is never approved by default.
 *
 * Returns the execution's answering sessions (agent → session), which may have grown.
 */
export async function resolveByAgent(
  deps: ExecutionDeps,
  execution: ExecutionRow,
  target: string,
  requests: PendingRequest[],
): Promise<Record<string, string>> {
  const resolvers = { ...execution.resolvers };
  for (const request of requests) {
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
      continue;
    }
    const reply = outcome.kind === 'done' ? outcome.content.trim() : '';
    const answer =
      request.kind === 'question'
        ? { approved: outcome.kind === 'done', response: { answer: reply } }
        : decide(reply, outcome.kind === 'done' ? null : `the agent ${target} could not answer`);
    try {
      await answerInput(deps.db, {
        tenant: execution.tenant,
        sessionId: execution.session_id,
        requestId: request.request_id,
        expectedSequence: request.expected_sequence,
        approved: answer.approved,
        response: answer.response,
        actor: { user: `agent:${target}`, tenant: execution.tenant },
        mayAnswer: () => true,
      });
    } catch (error) {
      // Answered already (a retry after a crash), or expired by a cancel: nothing to do.
      if (!isParleyError(error) || error.code !== 'stale_input') throw error;
    }
  }
  return resolvers;
}

function decide(
  reply: string,
  failure: string | null,
): { approved: boolean; response: Record<string, unknown> } {
  if (failure !== null) return { approved: false, response: { reason: failure } };
  const first = (reply.split(/\s+/)[0] ?? '').replace(/[^A-Za-z]/g, '').toUpperCase();
  const approved = ['APPROVE', 'APPROVED', 'YES'].includes(first);
  return { approved, response: { reason: reply.slice(0, 1000) } };
}

function requestMessage(execution: ExecutionRow, request: PendingRequest): string {
  const who = `The agent "${execution.agent}" working on the mission "${execution.mission}" (execution ${execution.execution_id})`;
  if (request.kind === 'question') {
    return `${who} asks you: ${request.prompt ?? '(no question text)'}\nReply with your answer only.`;
  }
  const what =
    request.kind === 'budget_extension'
      ? `asks to continue past its budget (${request.prompt ?? 'budget used up'}).`
      : `asks for your approval to call the tool ${request.tool ?? '?'} with these arguments: ${JSON.stringify(request.arguments)}`;
  return `${who} ${what}\nReply APPROVE or REJECT on the first line, then your reason.`;
}
