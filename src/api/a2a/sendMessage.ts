import type { Principal } from '../../config/types.js';
import { ParleyError } from '../../errors.js';
import { findInputRequest } from '../../store/findInputRequest.js';
import { findVisibleSession } from '../../store/findVisibleSession.js';
import { answerForPrincipal } from '../inputs.js';
import { viewerOf } from '../sessionAccess.js';
import { admitForPrincipal } from '../turns.js';
import { foldTask } from './foldTask.js';
import { dataOf, decisionOf, textOf, turnIdOfMessage, type SendParams } from './params.js';
import { sendPushConfig } from './pushConfigs.js';
import type { A2aScope } from './scope.js';
import { taskOf, type FoundTask } from './taskOf.js';

/** The task a message went to; `admitted` when the message started it. */
export interface SentMessage extends FoundTask {
  admitted: boolean;
}

/**
 * A message (`deliver`), with the push config its configuration gives, if any: checked
 * before the message is taken, stored on its task once it has one. Notifications of a
 * task the message admits start at the task's start; of a task it answers, now.
 */
export async function sendMessage(
  scope: A2aScope,
  principal: Principal,
  agent: string,
  params: SendParams,
  v03: boolean,
): Promise<SentMessage> {
  const { deps } = scope;
  const push = await sendPushConfig(deps.db, deps.config.a2a.pushNotifications, {
    principal,
    agent,
    params,
    wire: v03 ? '0.3' : '1.0',
  });
  const sent = await deliver(scope, principal, agent, params);
  await push?.(sent);
  return sent;
}

/**
 * A message: a new turn (its `messageId` the idempotency key; `contextId` continues a
 * session), or — with the `taskId` of a task waiting for input — the answer to it.
 */
async function deliver(
  scope: A2aScope,
  principal: Principal,
  agent: string,
  params: SendParams,
): Promise<SentMessage> {
  const { deps } = scope;
  const message = params.message;
  const text = textOf(message);
  if (message.taskId) {
    const task = await taskOf(deps, principal, agent, message.taskId);
    if (message.contextId && message.contextId !== task.identity.contextId) {
      throw new ParleyError('invalid_request', 'contextId is not the task’s', {
        field: 'params.message.contextId',
      });
    }
    await answerTask(scope, principal, task, text, dataOf(message));
    return { ...task, admitted: false };
  }
  let sessionId: string | null = null;
  if (message.contextId) {
    const visible = await findVisibleSession(
      deps.db,
      principal.tenant,
      message.contextId,
      viewerOf(deps, principal),
    );
    if (!visible) {
      throw new ParleyError('session_not_found', 'no such context', {
        field: 'params.message.contextId',
      });
    }
    sessionId = message.contextId;
  }
  const admission = await admitForPrincipal(deps, principal, {
    turnId: turnIdOfMessage(principal.user, agent, message.messageId),
    sessionId,
    agent,
    message: text,
  });
  return {
    identity: { taskId: admission.turn_id, contextId: admission.session_id },
    // The admission's own message is the first event of the task's story.
    from: admission.sequence - 1,
    admitted: true,
  };
}

/**
 * Answers the task's pending request (the one `request_id` names, else the oldest) as the
 * principal would in Parley's inbox: the same rules (approver roles, stale answers).
 */
async function answerTask(
  scope: A2aScope,
  principal: Principal,
  task: FoundTask,
  text: string,
  data: Record<string, unknown>,
): Promise<void> {
  const { deps } = scope;
  const fold = await foldTask(scope, task.identity, task.from, 'now');
  const named = typeof data.request_id === 'string' ? data.request_id : null;
  const pending = named ? fold.pending.get(named) : [...fold.pending.values()][0];
  if (!pending) {
    throw new ParleyError(
      fold.ended || named === null ? 'unsupported_operation' : 'input_not_found',
      fold.ended
        ? 'the task has ended: send a message without taskId (with its contextId) to go on'
        : named === null
          ? 'the task is not waiting for input'
          : 'no such pending request in this task',
    );
  }
  const asked = await findInputRequest(
    deps.db,
    principal.tenant,
    task.identity.contextId,
    pending.request_id,
  );
  if (!asked) throw new ParleyError('input_not_found', 'no such pending request in this task');
  const decision = decisionOf(text, data);
  const question = pending.kind === 'question';
  if (decision === null && !question) {
    throw new ParleyError(
      'invalid_request',
      'answer "approve" or "reject", or send a data part {"approved": true|false}',
      { field: 'params.message.parts' },
    );
  }
  const reason = typeof data.reason === 'string' ? data.reason : null;
  await answerForPrincipal(deps, principal, {
    sessionId: task.identity.contextId,
    requestId: pending.request_id,
    expectedSequence: asked.expected_sequence,
    approved: question ? decision !== false : (decision as boolean),
    response: question ? { answer: text } : reason ? { reason } : null,
    argumentsDigest: asked.arguments_digest ?? undefined,
    credentialRef: typeof data.credential_ref === 'string' ? data.credential_ref : undefined,
  });
}
