import { ListTasksResponse, SendMessageResponse, StreamResponse, Task } from '@a2a-js/sdk';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Principal } from '../../config/types.js';
import { ParleyError } from '../../errors.js';
import type { ParleyEvent } from '../../protocol/events.js';
import { findInputRequest } from '../../store/findInputRequest.js';
import { findVisibleSession } from '../../store/findVisibleSession.js';
import { cancelAsPrincipal, cancelWaitMs } from '../adapterStreams.js';
import { routeOptions, typed } from '../contract.js';
import { agentsOf, type ApiDeps } from '../deps.js';
import { JournalFeed } from '../feed.js';
import { answerForPrincipal } from '../inputs.js';
import { JournalFollower } from '../journalFollower.js';
import { findVisibleTurn, viewerOf } from '../sessionAccess.js';
import { openEventStream } from '../sseResponse.js';
import { SseWriter } from '../sseWriter.js';
import { admitForPrincipal } from '../turns.js';
import { a2aCardRoutes } from './card.js';
import {
  checkVersion,
  envelopeField,
  installRpcErrors,
  paramsOf,
  rpcEnvelope,
  rpcErrorBody,
  rpcIdOf,
  type RpcId,
} from './jsonRpc.js';
import { listTasks } from './listTasks.js';
import { pushConfigMethod, pushMethods, sendPushConfig, type PushMethod } from './pushConfigs.js';
import {
  dataOf,
  decisionOf,
  listParams,
  sendParams,
  taskParams,
  textOf,
  turnIdOfMessage,
  type SendParams,
} from './params.js';
import { a2aContracts } from './contracts.js';
import { TaskFold, trimHistory, type TaskIdentity } from './taskFold.js';
import { callFromV03, isV03Method, refusalInV03, resultInV03, streamedInV03 } from './v03.js';
import { whenClientGone } from '../clientGone.js';

/** Methods of A2A 1.0 that Parley does not offer, and what it answers them. */
const unsupported: Record<string, 'unsupported_operation'> = {
  GetExtendedAgentCard: 'unsupported_operation',
};

type Until = 'now' | 'settled' | 'ended';

/**
 * A2A (docs/protocols.md): each agent an A2A server over Parley's own admission, journal,
 * answers and cancel — the same tenancy and roles, the same durability. A task is one
 * turn; its state, reply artifact and updates are folded from the session's journal
 * (taskFold.ts), so any process answers for any task and a restart loses nothing.
 */
export async function a2aPlugin(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  const feed = new JournalFeed(deps.db, deps.wakeups, deps.config.runtime.pollMs);
  const open = new Set<AbortController>();
  app.addHook('onClose', async () => {
    feed.stop();
    for (const controller of open) controller.abort();
  });
  a2aCardRoutes(app, deps);

  await app.register(async (scope) => {
    installRpcErrors(scope);
    const rpc = a2aContracts.rpc;
    typed(scope).post(rpc.url, routeOptions(rpc), async (request, reply) => {
      const envelope = rpcEnvelope.safeParse(request.body);
      const id = rpcIdOf(request.body);
      try {
        if (!envelope.success) {
          throw new ParleyError(
            'invalid_request',
            'not a JSON-RPC 2.0 request (jsonrpc, method, id)',
            { field: envelopeField },
          );
        }
        const call = envelope.data;
        checkVersion(request.headers['a2a-version'], call.method);
        const agent = agentOf(request.principal, request.params.agent).name;
        if (!isV03Method(call.method)) return await dispatch(request, reply, agent, call, false);
        return await dispatch(request, reply, agent, callFromV03(call), true).catch((error) => {
          throw error instanceof ParleyError ? refusalInV03(call.method, error) : error;
        });
      } catch (error) {
        if (!(error instanceof ParleyError) || reply.sent) throw error;
        return reply.status(error.status).send(rpcErrorBody(error, id));
      }
    });
  });

  async function dispatch(
    request: FastifyRequest,
    reply: FastifyReply,
    agent: string,
    call: z.output<typeof rpcEnvelope>,
    v03: boolean,
  ): Promise<unknown> {
    const principal = request.principal;
    // A 0.3 call's result in 0.3's shape (v03.ts), else as 1.0 gives it.
    const result = (value: unknown) => ({
      jsonrpc: '2.0',
      id: call.id,
      result: v03 ? resultInV03(call.method, value) : value,
    });
    switch (call.method) {
      case 'SendMessage':
      case 'SendStreamingMessage': {
        const params = paramsOf(sendParams, call.params);
        const streaming = call.method === 'SendStreamingMessage';
        const { identity, from, admitted } = await send(principal, agent, params, v03);
        if (streaming) {
          return streamTask(request, reply, call.id, identity, from, {
            stopAtInput: true,
            fromStart: admitted,
            v03,
          });
        }
        const until = params.configuration?.returnImmediately === true ? 'now' : 'settled';
        const fold = await foldTask(
          identity,
          from,
          until,
          request,
          deps.config.server.blockingWaitMs,
        );
        const task = trimHistory(fold.snapshot(), params.configuration?.historyLength);
        return result(SendMessageResponse.toJSON({ payload: { $case: 'task', value: task } }));
      }
      case 'GetTask': {
        const params = paramsOf(taskParams, call.params);
        const { identity, from } = await taskOf(principal, agent, params.id);
        const fold = await foldTask(identity, from, 'now', request);
        return result(Task.toJSON(trimHistory(fold.snapshot(), params.historyLength)));
      }
      case 'ListTasks': {
        const params = paramsOf(listParams, call.params);
        const listed = await listTasks(deps, principal, agent, params, (identity, from) =>
          foldTask(identity, from, 'now', request),
        );
        return result(ListTasksResponse.toJSON(listed));
      }
      case 'CancelTask': {
        const params = paramsOf(taskParams, call.params);
        const { identity, from } = await taskOf(principal, agent, params.id);
        if ((await foldTask(identity, from, 'now')).ended) {
          throw new ParleyError('task_not_cancelable', 'the task has already ended');
        }
        const answer = await cancelAsPrincipal(deps.db, principal, {
          sessionId: identity.contextId,
          turnId: identity.taskId,
        });
        if (answer.result === 'too_late') {
          throw new ParleyError('task_not_cancelable', 'the task has already ended');
        }
        const fold = await foldTask(
          identity,
          from,
          'ended',
          request,
          cancelWaitMs(deps.config.server.blockingWaitMs),
        );
        return result(Task.toJSON(fold.snapshot()));
      }
      case 'SubscribeToTask': {
        const params = paramsOf(taskParams, call.params);
        const { identity, from } = await taskOf(principal, agent, params.id);
        const now = await foldTask(identity, from, 'now', request);
        if (now.ended) {
          throw new ParleyError(
            'unsupported_operation',
            'the task has ended: GetTask shows it as it ended',
          );
        }
        return streamTask(request, reply, call.id, identity, from, {
          stopAtInput: false,
          fromStart: false,
          v03,
        });
      }
      default: {
        if ((pushMethods as readonly string[]).includes(call.method)) {
          const value = await pushConfigMethod(
            {
              db: deps.db,
              settings: deps.config.a2a.pushNotifications,
              taskOf: (taskId) => taskOf(principal, agent, taskId),
              wire: v03 ? '0.3' : '1.0',
            },
            principal,
            call.method as PushMethod,
            call.params,
          );
          return result(value);
        }
        const refusal = unsupported[call.method];
        if (refusal) {
          throw new ParleyError(refusal, `${call.method} is not offered by this server`);
        }
        throw new ParleyError('method_not_found', `no method "${call.method}"`);
      }
    }
  }

  /**
   * A message (`deliver`), with the push config its configuration gives, if any: checked
   * before the message is taken, stored on its task once it has one. Notifications of a
   * task the message admits start at the task's start; of a task it answers, now.
   */
  async function send(
    principal: Principal,
    agent: string,
    params: SendParams,
    v03: boolean,
  ): Promise<{ identity: TaskIdentity; from: number; admitted: boolean }> {
    const push = await sendPushConfig(deps.db, deps.config.a2a.pushNotifications, {
      principal,
      agent,
      params,
      wire: v03 ? '0.3' : '1.0',
    });
    const sent = await deliver(principal, agent, params);
    await push?.(sent);
    return sent;
  }

  /**
   * A message: a new turn (its `messageId` the idempotency key; `contextId` continues a
   * session), or — with the `taskId` of a task waiting for input — the answer to it.
   */
  async function deliver(
    principal: Principal,
    agent: string,
    params: SendParams,
  ): Promise<{ identity: TaskIdentity; from: number; admitted: boolean }> {
    const message = params.message;
    const text = textOf(message);
    if (message.taskId) {
      const task = await taskOf(principal, agent, message.taskId);
      if (message.contextId && message.contextId !== task.identity.contextId) {
        throw new ParleyError('invalid_request', 'contextId is not the task’s', {
          field: 'params.message.contextId',
        });
      }
      await answerTask(principal, task, text, dataOf(message));
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
    principal: Principal,
    task: { identity: TaskIdentity; from: number },
    text: string,
    data: Record<string, unknown>,
  ): Promise<void> {
    const fold = await foldTask(task.identity, task.from, 'now');
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

  /** A task by its id: a turn of this agent that the principal may see (else as missing). */
  async function taskOf(
    principal: Principal,
    agent: string,
    taskId: string,
  ): Promise<{ identity: TaskIdentity; from: number }> {
    const found = await findVisibleTurn(deps, principal, taskId);
    if (!found || found.session.agent !== agent) {
      throw new ParleyError('turn_not_found', `no task "${taskId}"`);
    }
    const { place } = found;
    return {
      identity: { taskId, contextId: place.session_id },
      from: place.admitted_sequence - 1,
    };
  }

  function agentOf(principal: Principal, name: string) {
    const agent = agentsOf(deps).get(principal.tenant, name);
    if (!agent) throw new ParleyError('unknown_agent', `no agent named "${name}"`);
    return agent;
  }

  /**
   * Folds the journal from `from` into the task: `now` as it stands, `settled` once it
   * ended or waits for input, `ended` once it ended (at most `boundMs`). Every event in
   * the journal is applied before a state is judged, so a request answered later in the
   * same read never counts as waiting.
   */
  async function foldTask(
    identity: TaskIdentity,
    from: number,
    until: Until,
    request?: FastifyRequest,
    boundMs?: number,
  ): Promise<TaskFold> {
    const fold = new TaskFold(identity);
    const controller = new AbortController();
    const signal =
      boundMs === undefined
        ? controller.signal
        : AbortSignal.any([controller.signal, AbortSignal.timeout(boundMs)]);
    const unwatch = request ? whenClientGone(request, () => controller.abort()) : () => {};
    open.add(controller);
    const follower = new JournalFollower(deps.db, feed, identity.contextId, from);
    const apply = (event: ParleyEvent) => fold.apply(event);
    const done = () => until === 'now' || (until === 'settled' ? fold.settled : fold.ended);
    try {
      await follower.drain(apply);
      while (!done()) if (!(await follower.take(signal, apply))) break;
    } finally {
      unwatch();
      follower.close();
      open.delete(controller);
    }
    return fold;
  }

  /**
   * Streams the task: the task first, then each update after it, until it ended (or,
   * `stopAtInput`, waits for input) or the client leaves. `fromStart`: the task as it was
   * admitted, then every update of its story (a send's stream, or its retry); otherwise the
   * task as it stands now, its reply so far included, then the updates after it (a
   * resubscribe, an answer). Either way no chunk comes twice: what came before the first
   * update sent is in the task the stream starts with.
   */
  async function streamTask(
    request: FastifyRequest,
    reply: FastifyReply,
    id: RpcId,
    identity: TaskIdentity,
    from: number,
    how: { stopAtInput: boolean; fromStart: boolean; v03: boolean },
  ): Promise<void> {
    const controller = new AbortController();
    open.add(controller);
    const fold = new TaskFold(identity);
    const follower = new JournalFollower(deps.db, feed, identity.contextId, from);
    const frame = (value: StreamResponse) => {
      const result = how.v03 ? streamedInV03(value, how.stopAtInput) : StreamResponse.toJSON(value);
      return `data: ${JSON.stringify({ jsonrpc: '2.0', id, result })}\n\n`;
    };
    const done = () => fold.ended || (how.stopAtInput && fold.settled);
    let response: ReturnType<typeof openEventStream> | null = null;
    let stopKeepAlive = () => {};
    let unwatch = () => {};
    try {
      // The task before its first update (fromStart), else as it stands once caught up.
      let first: Task | null = null;
      await follower.drain((event) => {
        const before = fold.updates.length;
        const snapshot: Task | null = how.fromStart && first === null ? fold.snapshot() : null;
        fold.apply(event);
        if (snapshot && fold.updates.length > before) first = snapshot;
      });
      let sent = first === null ? fold.updates.length : 0;
      response = openEventStream(reply);
      unwatch = whenClientGone(request, () => controller.abort());
      const stream = new SseWriter(response, {
        keepaliveMs: deps.config.server.keepaliveMs,
        bufferBytes: deps.config.limits.streamBufferBytes,
        onDrop: () => controller.abort(),
      });
      stopKeepAlive = stream.keepAlive();
      stream.write(frame({ payload: { $case: 'task', value: first ?? fold.snapshot() } }));
      for (const update of fold.updates.slice(sent)) stream.write(frame(update));
      sent = fold.updates.length;
      while (!done() && !controller.signal.aborted) {
        if (!(await follower.take(controller.signal, (event) => fold.apply(event)))) break;
        for (const update of fold.updates.slice(sent)) stream.write(frame(update));
        sent = fold.updates.length;
      }
    } finally {
      unwatch();
      stopKeepAlive();
      follower.close();
      open.delete(controller);
      if (response && !response.writableEnded) response.end();
    }
  }
}
