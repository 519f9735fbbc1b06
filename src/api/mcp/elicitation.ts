import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  ElicitResultSchema,
  RELATED_TASK_META_KEY,
  type ElicitRequestFormParams,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import type { InputRequiredEvent } from '../../protocol/events.js';
import type { Elicit, Elicited } from './followTurn.js';

/**
 * Asking a person through the MCP client (docs/protocols.md, "MCP server"): an approval or
 * a question the turn waits on becomes an `elicitation/create` form, sent on the stream of
 * the request being answered — a `tools/call`, or a task's `tasks/result` (then marked
 * with the task, `_meta["io.modelcontextprotocol/related-task"]`, as the protocol's tasks
 * utility asks) — and the form's answer becomes Parley's answer of the request.
 */

/**
 * How the request `extra` answers asks the person, or null when the client declared no
 * form elicitation. `taskId`: the task the request follows (`tasks/result`), else null.
 */
export function elicitThrough(
  server: Server,
  extra: RequestHandlerExtra<ServerRequest, ServerNotification>,
  timeoutMs: number,
  taskId: string | null,
): Elicit | null {
  const elicitation = server.getClientCapabilities()?.elicitation;
  // An empty `elicitation` is form mode (the protocol's older declaration).
  const canElicit =
    elicitation !== undefined &&
    (elicitation.form !== undefined || Object.keys(elicitation).length === 0);
  if (!canElicit) return null;
  return async (asked, signal) => {
    const form = formOf(asked);
    const params: ElicitRequestFormParams =
      taskId === null ? form : { ...form, _meta: { [RELATED_TASK_META_KEY]: { taskId } } };
    const answer = await extra.sendRequest(
      { method: 'elicitation/create', params },
      ElicitResultSchema,
      { signal, timeout: timeoutMs },
    );
    return elicitedAnswer(asked, answer.action, answer.content);
  };
}

/** The form that asks the person: approve a call (yes/no and a reason), or answer a question. */
function formOf(asked: InputRequiredEvent): ElicitRequestFormParams {
  if (asked.kind === 'question') {
    return {
      mode: 'form',
      message: asked.prompt ?? 'The agent asks a question.',
      requestedSchema: {
        type: 'object',
        properties: { answer: { type: 'string', title: 'Answer' } },
        required: ['answer'],
      },
    };
  }
  return {
    mode: 'form',
    message: `Approve ${asked.tool ?? 'the call'} with ${JSON.stringify(asked.arguments ?? {})}?`,
    requestedSchema: {
      type: 'object',
      properties: {
        approve: { type: 'boolean', title: 'Approve' },
        reason: { type: 'string', title: 'Reason' },
      },
      required: ['approve'],
    },
  };
}

/**
 * The answer a form brings back: `accept` answers with its fields, `decline` refuses,
 * `cancel` (dismissed) answers nothing: the request waits in Parley's inbox.
 */
function elicitedAnswer(
  asked: InputRequiredEvent,
  action: 'accept' | 'decline' | 'cancel',
  content: Record<string, unknown> | undefined,
): Elicited {
  if (action === 'cancel') return null;
  if (action === 'decline') return { approved: false, response: null };
  if (asked.kind === 'question') {
    const answer = content?.answer;
    return typeof answer === 'string' ? { approved: true, response: { answer } } : null;
  }
  const reason =
    typeof content?.reason === 'string' && content.reason !== '' ? content.reason : null;
  return {
    approved: content?.approve === true,
    response: reason === null ? null : { reason },
  };
}
