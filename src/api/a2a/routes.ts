import { ListTasksResponse, SendMessageResponse, Task } from '@a2a-js/sdk';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ParleyError } from '../../errors.js';
import { cancelAsPrincipal, cancelWaitMs } from '../adapterStreams.js';
import { routeOptions, typed } from '../contract.js';
import type { ApiDeps } from '../deps.js';
import { a2aCardRoutes } from './card.js';
import { a2aContracts } from './contracts.js';
import { foldTask } from './foldTask.js';
import {
  checkVersion,
  envelopeField,
  installRpcErrors,
  paramsOf,
  rpcEnvelope,
  rpcErrorBody,
  rpcIdOf,
} from './jsonRpc.js';
import { listTasks } from './listTasks.js';
import { listParams, sendParams, taskParams } from './params.js';
import { pushConfigMethod, pushMethods, type PushMethod } from './pushConfigs.js';
import { openA2aScope, type A2aScope } from './scope.js';
import { sendMessage } from './sendMessage.js';
import { streamTask } from './streamTask.js';
import { trimHistory } from './taskFold.js';
import { agentOf, taskOf } from './taskOf.js';
import { callFromV03, isV03Method, refusalInV03, resultInV03 } from './v03.js';

/** Methods of A2A 1.0 that Parley does not offer, and what it answers them. */
const unsupported: Record<string, 'unsupported_operation'> = {
  GetExtendedAgentCard: 'unsupported_operation',
};

/**
 * A2A (docs/protocols.md): each agent an A2A server over Parley's own admission, journal,
 * answers and cancel — the same tenancy and roles, the same durability. A task is one
 * turn; its state, reply artifact and updates are folded from the session's journal
 * (taskFold.ts), so any process answers for any task and a restart loses nothing. This
 * file is the JSON-RPC endpoint and its dispatch; a message is `sendMessage.ts`, a wait
 * `foldTask.ts`, a stream `streamTask.ts`.
 */
export async function a2aPlugin(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  const scope = openA2aScope(app, deps);
  a2aCardRoutes(app, deps);

  await app.register(async (routes) => {
    installRpcErrors(routes);
    const rpc = a2aContracts.rpc;
    typed(routes).post(rpc.url, routeOptions(rpc), async (request, reply) => {
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
        const agent = agentOf(deps, request.principal, request.params.agent).name;
        if (!isV03Method(call.method)) {
          return await dispatch(scope, request, reply, agent, call, false);
        }
        return await dispatch(scope, request, reply, agent, callFromV03(call), true).catch(
          (error) => {
            throw error instanceof ParleyError ? refusalInV03(call.method, error) : error;
          },
        );
      } catch (error) {
        if (!(error instanceof ParleyError) || reply.sent) throw error;
        return reply.status(error.status).send(rpcErrorBody(error, id));
      }
    });
  });
}

/** One JSON-RPC call, by its method; `v03`: the call came, and is answered, in A2A 0.3. */
async function dispatch(
  scope: A2aScope,
  request: FastifyRequest,
  reply: FastifyReply,
  agent: string,
  call: z.output<typeof rpcEnvelope>,
  v03: boolean,
): Promise<unknown> {
  const { deps } = scope;
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
      const { identity, from, admitted } = await sendMessage(scope, principal, agent, params, v03);
      if (streaming) {
        return streamTask(scope, request, reply, call.id, identity, from, {
          stopAtInput: true,
          fromStart: admitted,
          v03,
        });
      }
      const until = params.configuration?.returnImmediately === true ? 'now' : 'settled';
      const fold = await foldTask(
        scope,
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
      const { identity, from } = await taskOf(deps, principal, agent, params.id);
      const fold = await foldTask(scope, identity, from, 'now', request);
      return result(Task.toJSON(trimHistory(fold.snapshot(), params.historyLength)));
    }
    case 'ListTasks': {
      const params = paramsOf(listParams, call.params);
      const listed = await listTasks(deps, principal, agent, params, (identity, from) =>
        foldTask(scope, identity, from, 'now', request),
      );
      return result(ListTasksResponse.toJSON(listed));
    }
    case 'CancelTask': {
      const params = paramsOf(taskParams, call.params);
      const { identity, from } = await taskOf(deps, principal, agent, params.id);
      if ((await foldTask(scope, identity, from, 'now')).ended) {
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
        scope,
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
      const { identity, from } = await taskOf(deps, principal, agent, params.id);
      const now = await foldTask(scope, identity, from, 'now', request);
      if (now.ended) {
        throw new ParleyError(
          'unsupported_operation',
          'the task has ended: GetTask shows it as it ended',
        );
      }
      return streamTask(scope, request, reply, call.id, identity, from, {
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
            taskOf: (taskId) => taskOf(deps, principal, agent, taskId),
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
