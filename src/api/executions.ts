import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Principal } from '../config/types.js';
import { ParleyError } from '../errors.js';
import { clientKeyPattern, newUnblockCommandId } from '../ids.js';
import { cancelExecution } from '../store/cancelExecution.js';
import { unblockExecution } from '../store/unblockExecution.js';
import { getExecution, toExecutionProjection, type ExecutionRow } from '../store/getExecution.js';
import { listExecutions } from '../store/listExecutions.js';
import { findVisibleSession } from '../store/findVisibleSession.js';
import type { ApiDeps } from './deps.js';
import { hasRole, isAddressed } from './principal.js';
import { viewerOf } from './sessionAccess.js';
import { page } from '../protocol/rest.js';
import { execution, executionCommandAnswer, executionStatus } from '../protocol/missions.js';
import { route, routeOptions, typed } from './contract.js';
import { pathId, text, timeCursor } from './validate.js';
import { requireMemberWorkspace } from './workspaces.js';

const listQuery = z.object({
  mission: text().min(1).max(128).optional(),
  status: executionStatus.optional(),
  user: text().min(1).max(128).optional(),
  workspace_id: text()
    .min(1)
    .max(128)
    .optional()
    .meta({ description: 'only those of this workspace (one the caller is a member of)' }),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().max(500).optional(),
});

const commandId = z.string().regex(clientKeyPattern, 'must be 1-128 characters of A-Z a-z 0-9 _ -');
const cancelBody = z.object({ command_id: commandId }).strict();
// command_id makes a retry idempotent, like cancel's; a client that sends none gets one
// made here (its retry is then a second command: `409 execution_not_blocked`).
const unblockBody = z
  .object({
    command_id: commandId.optional().meta({
      description:
        'idempotency key, as for cancel; without one the server makes one and a retry is a second command',
    }),
    note: text().max(4000).optional(),
  })
  .strict();

export const executionContracts = {
  list: route({
    method: 'GET',
    url: '/api/v1/executions',
    summary: "The tenant's executions, newest first",
    querystring: listQuery,
    responses: { '200': page(execution) },
    errors: {
      '400': 'invalid_request, invalid_cursor',
      '404': 'workspace_not_found (also one the caller is not a member of)',
    },
  }),
  detail: route({
    method: 'GET',
    url: '/api/v1/executions/:executionId',
    summary: "An execution's projection",
    responses: { '200': execution },
    errors: { '404': 'execution_not_found' },
  }),
  cancel: route({
    method: 'POST',
    url: '/api/v1/executions/:executionId/cancel',
    summary: 'Cancel an execution (durable, idempotent by command_id; its running turn too)',
    body: cancelBody,
    responses: { '200': executionCommandAnswer },
    errors: {
      '400': 'invalid_request',
      '404': 'execution_not_found',
      '409': 'command_conflict',
    },
  }),
  unblock: route({
    method: 'POST',
    url: '/api/v1/executions/:executionId/unblock',
    summary: 'Let a blocked loop go on; the note reaches its next iteration and evaluation',
    body: unblockBody,
    bodyOptional: true,
    responses: { '200': executionCommandAnswer },
    errors: {
      '400': 'invalid_request',
      '403': 'forbidden (not where its interruptions go)',
      '404': 'execution_not_found',
      '409': 'execution_not_blocked, command_conflict',
    },
  }),
};

/**
 * Whether a principal is the one an execution's interruptions go to (`interrupt_to`; by
 * default its own user). Agents' requests go to no person: an admin may still act.
 */
export function isRoutedTo(
  principal: Principal,
  execution: Pick<ExecutionRow, 'interrupt_to' | 'user_name'>,
): boolean {
  if (hasRole(principal, 'admin')) return true;
  return isAddressed(principal, execution.interrupt_to ?? `user:${execution.user_name}`);
}

/**
 * Executions of the principal's tenant — the listing (filters, a workspace's too; cursor), the
 * projection, a durable idempotent cancel, and unblocking a loop that the evaluation found
 * blocked (by the person its interruptions go to, its own user, or an admin). An execution
 * is its session's work and is seen as its session is: one whose session the principal
 * may not see (another tenant's included) is the same 404 as a missing one.
 */
export function executionRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const visibleExecution = async (principal: Principal, executionId: string) => {
    const execution = await getExecution(deps.db, principal.tenant, executionId);
    const visible =
      execution !== null &&
      (await findVisibleSession(
        deps.db,
        principal.tenant,
        execution.session_id,
        viewerOf(deps, principal),
      )) !== null;
    if (!execution || !visible) {
      throw new ParleyError('execution_not_found', 'no such execution');
    }
    return execution;
  };

  const api = typed(app);
  const contracts = executionContracts;
  api.get(contracts.list.url, routeOptions(contracts.list), async (request) => {
    const query = request.query;
    let cursor = null;
    if (query.cursor !== undefined) {
      const { at, id } = timeCursor(query.cursor);
      cursor = { createdAt: at, executionId: id };
    }
    if (query.workspace_id !== undefined) {
      await requireMemberWorkspace(deps.db, request.principal, query.workspace_id, 'workspace_id');
    }
    return listExecutions(deps.db, request.principal.tenant, viewerOf(deps, request.principal), {
      mission: query.mission ?? null,
      status: query.status ?? null,
      user: query.user ?? null,
      workspaceId: query.workspace_id ?? null,
      limit: query.limit,
      cursor,
    });
  });

  api.get(contracts.detail.url, routeOptions(contracts.detail), async (request) => {
    const executionId = pathId(request.params.executionId, 'execution_id');
    return toExecutionProjection(await visibleExecution(request.principal, executionId));
  });

  api.post(contracts.cancel.url, routeOptions(contracts.cancel), async (request) => {
    const executionId = pathId(request.params.executionId, 'execution_id');
    const body = request.body;
    await visibleExecution(request.principal, executionId);
    return cancelExecution(deps.db, {
      tenant: request.principal.tenant,
      executionId,
      commandId: body.command_id,
    });
  });

  api.post(contracts.unblock.url, routeOptions(contracts.unblock), async (request) => {
    const executionId = pathId(request.params.executionId, 'execution_id');
    const body = request.body;
    const principal = request.principal;
    const execution = await visibleExecution(principal, executionId);
    if (!isRoutedTo(principal, execution) && principal.user !== execution.user_name) {
      throw new ParleyError('forbidden', "this execution's interruptions go to someone else");
    }
    return unblockExecution(deps.db, {
      tenant: principal.tenant,
      executionId,
      commandId: body.command_id ?? newUnblockCommandId(),
      note: body.note ?? null,
    });
  });
}
