import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Principal } from '../config/types.js';
import { ParleyError } from '../errors.js';
import { newWorkspaceId } from '../ids.js';
import { workspaceView, type WorkspaceInfo } from '../protocol/rest.js';
import type { Queryable } from '../store/db.js';
import {
  createWorkspace,
  deleteWorkspace,
  listMemberWorkspaces,
  memberWorkspace,
  updateWorkspace,
  type Workspace,
} from '../store/workspaces.js';
import { route, routeOptions, typed } from './contract.js';
import type { ApiDeps } from './deps.js';
import { hasRole } from './principal.js';
import { pathId, text } from './validate.js';

/** Role or user names, each listed once. */
const names = z
  .array(text().min(1).max(128))
  .max(200)
  .transform((listed) => [...new Set(listed)]);
const members = z
  .object({
    roles: names.optional().meta({ description: 'a principal with one of them is a member' }),
    users: names.optional().meta({ description: 'these users are members' }),
  })
  .strict()
  .meta({
    description:
      'Who is a member (a list left out: empty on create, unchanged on update). Both empty: the whole tenant.',
  });
const name = text().trim().min(1).max(100);
const description = text().max(2000).nullable();

const createBody = z
  .object({ name, description: description.optional(), members: members.optional() })
  .strict();
const updateBody = z
  .object({
    name: name.optional(),
    description: description.optional(),
    members: members.optional(),
  })
  .strict()
  .refine(
    (body) =>
      body.name !== undefined || body.description !== undefined || body.members !== undefined,
    { message: 'give name, description or members' },
  );

const hidden = "workspace_not_found (also one the caller is not a member of, or another tenant's)";
const adminOnly = 'forbidden: a member, but not an admin';

export const workspaceContracts = {
  list: route({
    method: 'GET',
    url: '/api/v1/workspaces',
    summary: "The workspaces of the caller's tenant it is a member of, by name",
    responses: { '200': z.object({ items: z.array(workspaceView) }) },
    errors: {},
  }),
  create: route({
    method: 'POST',
    url: '/api/v1/workspaces',
    summary: 'Create a workspace of the tenant (admin)',
    body: createBody,
    responses: { '201': workspaceView },
    errors: {
      '400': 'invalid_request',
      '403': 'forbidden (not an admin)',
      '409': 'workspace_name_taken (the tenant has one of that name, whatever its case)',
    },
  }),
  detail: route({
    method: 'GET',
    url: '/api/v1/workspaces/:workspaceId',
    summary: 'A workspace the caller is a member of',
    responses: { '200': workspaceView },
    errors: { '404': hidden },
  }),
  update: route({
    method: 'PATCH',
    url: '/api/v1/workspaces/:workspaceId',
    summary: 'Rename a workspace, describe it, or change its members (admin)',
    body: updateBody,
    responses: { '200': workspaceView },
    errors: {
      '400': 'invalid_request',
      '403': adminOnly,
      '404': hidden,
      '409': 'workspace_name_taken',
    },
  }),
  delete: route({
    method: 'DELETE',
    url: '/api/v1/workspaces/:workspaceId',
    summary: 'Delete a workspace (admin): its sessions and executions stay, in no workspace',
    responses: { '204': { description: 'Deleted' } },
    errors: { '403': adminOnly, '404': `${hidden}; also a retried DELETE` },
  }),
};

/**
 * A tenant's workspaces (docs/web.md, "Workspaces"): named groups of sessions and
 * executions. Members read them; a tenant admin (the `admin` role, as for budgets and
 * definitions) creates, changes and deletes them, and is a member of every one. A
 * workspace the caller is not a member of — another tenant's included — is the same 404
 * as a missing one (store/workspaces.ts decides membership).
 */
export function workspaceRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const api = typed(app);
  const contracts = workspaceContracts;

  api.get(contracts.list.url, routeOptions(contracts.list), async (request) => ({
    items: (await listMemberWorkspaces(deps.db, request.principal)).map(toWorkspaceView),
  }));

  api.post(contracts.create.url, routeOptions(contracts.create), async (request, reply) => {
    const principal = request.principal;
    requireAdmin(principal);
    const body = request.body;
    const created = await createWorkspace(deps.db, {
      tenant: principal.tenant,
      workspaceId: newWorkspaceId(),
      name: body.name,
      description: body.description ?? null,
      memberRoles: body.members?.roles ?? [],
      memberUsers: body.members?.users ?? [],
      createdBy: principal.user,
    });
    if (created === 'name_taken') throw nameTaken(body.name);
    return reply.status(201).send(toWorkspaceView(created));
  });

  api.get(contracts.detail.url, routeOptions(contracts.detail), async (request) => {
    const id = pathId(request.params.workspaceId, 'workspace_id');
    return toWorkspaceView(await requireMemberWorkspace(deps.db, request.principal, id));
  });

  api.patch(contracts.update.url, routeOptions(contracts.update), async (request) => {
    const principal = request.principal;
    const id = pathId(request.params.workspaceId, 'workspace_id');
    await requireMemberWorkspace(deps.db, principal, id);
    requireAdmin(principal);
    const body = request.body;
    const updated = await updateWorkspace(deps.db, principal.tenant, id, {
      name: body.name,
      description: body.description,
      memberRoles: body.members?.roles,
      memberUsers: body.members?.users,
    });
    if (updated === 'name_taken') throw nameTaken(body.name ?? '');
    if (updated === null) throw notFound();
    return toWorkspaceView(updated);
  });

  api.delete(contracts.delete.url, routeOptions(contracts.delete), async (request, reply) => {
    const principal = request.principal;
    const id = pathId(request.params.workspaceId, 'workspace_id');
    await requireMemberWorkspace(deps.db, principal, id);
    requireAdmin(principal);
    if (!(await deleteWorkspace(deps.db, principal.tenant, id))) throw notFound();
    return reply.status(204).send();
  });
}

/**
 * The workspace a request names (a path, a body's or a query's `workspace_id`), if the
 * principal is a member; else `404 workspace_not_found`, the same for a missing one and
 * another tenant's. `field` names the body or query field in the error.
 */
export async function requireMemberWorkspace(
  db: Queryable,
  principal: Principal,
  workspaceId: string,
  field?: string,
): Promise<Workspace> {
  const found = await memberWorkspace(db, principal, workspaceId);
  if (!found) throw notFound(field);
  return found;
}

export function toWorkspaceView(row: Workspace): WorkspaceInfo {
  return {
    workspace_id: row.workspace_id,
    name: row.name,
    description: row.description,
    members: { roles: row.member_roles, users: row.member_users },
    created_by: row.created_by,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

function requireAdmin(principal: Principal): void {
  if (!hasRole(principal, 'admin')) {
    throw new ParleyError('forbidden', 'workspaces are created and changed by an admin');
  }
}

function notFound(field?: string): ParleyError {
  if (field === undefined) return new ParleyError('workspace_not_found', 'no such workspace');
  return new ParleyError('workspace_not_found', `${field}: no such workspace`, { field });
}

function nameTaken(name: string): ParleyError {
  return new ParleyError('workspace_name_taken', `the tenant has a workspace named "${name}"`, {
    field: 'name',
  });
}
