import { rm } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ParleyError } from '../errors.js';
import { newSessionId } from '../ids.js';
import { createSession } from '../store/createSession.js';
import { deleteSession } from '../store/deleteSession.js';
import { getSession } from '../store/getSession.js';
import { listMessages } from '../store/listMessages.js';
import { listSessions } from '../store/listSessions.js';
import { updateSessionAccess } from '../store/updateSessionAccess.js';
import { editSessionData } from '../store/editSessionData.js';
import type { SessionAccess } from '../store/findVisibleSession.js';
import type { Principal } from '../config/types.js';
import { workspaceDir } from '../tools/shell/workspace.js';
import { holdWorkspace, setSessionWorkspace } from '../store/workspaces.js';
import { page, session, transcriptMessage } from '../protocol/rest.js';
import { route, routeOptions, typed } from './contract.js';
import { agentsOf, type ApiDeps } from './deps.js';
import { hasRole } from './principal.js';
import { mayManage, viewerOf } from './sessionAccess.js';
import { text, timeCursor } from './validate.js';
import { requireMemberWorkspace } from './workspaces.js';

const visibility = z.enum(['private', 'tenant', 'room']);
const workspaceId = text().min(1).max(128);
/** A room's members: user names, each listed once. */
const members = z
  .array(text().min(1).max(128))
  .max(200)
  .transform((names) => [...new Set(names)])
  .meta({
    id: 'Members',
    description: 'User names who see a `room` session besides its owner (replaces the list).',
  });
const createBody = z
  .object({
    agent: text().min(1).max(128).optional(),
    title: text().max(500).optional(),
    visibility: visibility.optional().meta({ description: "Default: the agent's `visibility`." }),
    members: members.optional(),
    workspace_id: workspaceId
      .optional()
      .meta({ description: 'a workspace the caller is a member of, to group it in' }),
  })
  .strict();
const updateBody = z
  .object({
    visibility: visibility.optional(),
    members: members.optional(),
    data: z.record(z.string(), z.unknown()).optional().meta({
      description:
        "(admins) The session's new domain state, whole; must satisfy its agent's `state.schema`.",
    }),
    workspace_id: workspaceId.nullable().optional().meta({
      description: 'the workspace to group it in (one the caller is a member of); null: none',
    }),
  })
  .strict()
  .refine(
    (body) =>
      body.visibility !== undefined ||
      body.members !== undefined ||
      body.data !== undefined ||
      body.workspace_id !== undefined,
    { message: 'give visibility, members, data or workspace_id' },
  );
const limit = z.coerce.number().int().min(1).max(200).default(50);
const listQuery = z.object({
  limit,
  cursor: text().max(500).optional(),
  workspace_id: workspaceId
    .optional()
    .meta({ description: 'only the sessions of this workspace (one the caller is a member of)' }),
});
const transcriptQuery = z.object({ before: text().max(500).optional(), limit });
const hidden = 'session_not_found (also a session the principal may not see)';
const notManager = 'forbidden: visible, but neither its owner nor an admin';

export const sessionContracts = {
  create: route({
    method: 'POST',
    url: '/api/v1/chat/sessions',
    summary: 'Create a session (the greeting is journaled in the same transaction)',
    body: createBody,
    bodyOptional: true,
    responses: { '201': session },
    errors: {
      '400': 'invalid_request',
      '404': 'unknown_agent, workspace_not_found (also one the caller is not a member of)',
    },
  }),
  list: route({
    method: 'GET',
    url: '/api/v1/chat/sessions',
    summary: 'List sessions, newest activity first',
    querystring: listQuery,
    responses: { '200': page(session) },
    errors: {
      '400': 'invalid_request, invalid_cursor',
      '404': 'workspace_not_found (also one the caller is not a member of)',
    },
  }),
  detail: route({
    method: 'GET',
    url: '/api/v1/chat/sessions/:sessionId',
    summary: 'Session projection (the resync point)',
    responses: { '200': session },
    errors: { '404': hidden },
  }),
  update: route({
    method: 'PATCH',
    url: '/api/v1/chat/sessions/:sessionId',
    summary:
      "Change who sees the session or its workspace (its owner or an admin), or its state's data (an admin)",
    body: updateBody,
    responses: { '200': session },
    errors: {
      '400': 'invalid_request (also data its agent has no state for, or its schema refuses)',
      '403': `${notManager}; data: not an admin`,
      '404': `${hidden}; workspace_not_found (also one the caller is not a member of)`,
      '409': 'session_busy: data while a turn is in flight',
    },
  }),
  delete: route({
    method: 'DELETE',
    url: '/api/v1/chat/sessions/:sessionId',
    summary: 'Delete the session and its text everywhere (its owner or an admin); usage rows stay',
    responses: { '204': { description: 'Deleted' } },
    errors: {
      '403': notManager,
      '404': 'session_not_found (also a retried DELETE)',
      '409': 'session_busy: an execution still works in the session',
    },
  }),
  messages: route({
    method: 'GET',
    url: '/api/v1/chat/sessions/:sessionId/messages',
    summary: 'Durable transcript, newest first',
    querystring: transcriptQuery,
    responses: { '200': page(transcriptMessage) },
    errors: { '404': 'session_not_found' },
  }),
};

/**
 * PROTOCOL.md §1: create, list (cursor), detail projection, transcript (backward cursor);
 * and, Parley's own, change who sees a session (PATCH) and delete it (DELETE). Every
 * `:sessionId` route is reached only for a session the principal may see
 * (sessionAccess.ts); the list shows only those.
 */
export function sessionRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const api = typed(app);
  const contracts = sessionContracts;
  api.post(contracts.create.url, routeOptions(contracts.create), async (request, reply) => {
    const body = request.body;
    const { tenant, user } = request.principal;
    const agents = agentsOf(deps);
    const agent = body.agent ?? agents.defaultName(tenant);
    const agentConfig = agents.get(tenant, agent);
    if (!agentConfig) throw new ParleyError('unknown_agent', `no agent named "${agent}"`);
    const workspace = body.workspace_id ?? null;
    if (workspace !== null) {
      await requireMemberWorkspace(deps.db, request.principal, workspace, 'workspace_id');
    }
    const sessionId = newSessionId();
    await deps.db.transaction(async (tx) => {
      // Held until the session is in it: a concurrent delete then clears it too.
      if (workspace !== null && !(await holdWorkspace(tx, tenant, workspace))) {
        throw new ParleyError('workspace_not_found', 'workspace_id: no such workspace', {
          field: 'workspace_id',
        });
      }
      await createSession(tx, {
        tenant,
        sessionId,
        agent,
        title: body.title ?? null,
        greeting: agentConfig.greeting,
        owner: user,
        visibility: body.visibility ?? agentConfig.visibility,
        members: body.members ?? [],
        workspaceId: workspace,
      });
    });
    const created = await getSession(deps.db, tenant, sessionId);
    if (!created) throw new ParleyError('session_not_found', 'no such session');
    return reply.status(201).send(created);
  });

  api.get(contracts.list.url, routeOptions(contracts.list), async (request) => {
    const query = request.query;
    let cursor = null;
    if (query.cursor !== undefined) {
      const { at, id } = timeCursor(query.cursor);
      cursor = { updatedAt: at, sessionId: id };
    }
    const principal = request.principal;
    if (query.workspace_id !== undefined) {
      await requireMemberWorkspace(deps.db, principal, query.workspace_id, 'workspace_id');
    }
    const listed = await listSessions(deps.db, principal.tenant, viewerOf(deps, principal), {
      limit: query.limit,
      cursor,
      workspaceId: query.workspace_id ?? null,
    });
    return { items: listed.items, next_cursor: listed.next_cursor };
  });

  api.get(contracts.detail.url, routeOptions(contracts.detail), async (request) => {
    const found = await getSession(deps.db, request.principal.tenant, request.session.session_id);
    if (!found) throw new ParleyError('session_not_found', 'no such session');
    return found;
  });

  api.patch(contracts.update.url, routeOptions(contracts.update), async (request) => {
    const body = request.body;
    const tenant = request.principal.tenant;
    if (!mayManage(request.principal, request.session)) {
      throw new ParleyError(
        'forbidden',
        "only the session's owner or an admin may change who sees it or its workspace",
      );
    }
    const sessionId = request.session.session_id;
    // Checked before anything changes: a refused workspace leaves the session as it was.
    if (body.workspace_id) {
      await requireMemberWorkspace(deps.db, request.principal, body.workspace_id, 'workspace_id');
    }
    if (body.data !== undefined)
      await editData(deps, request.principal, request.session, body.data);
    if (body.workspace_id !== undefined) {
      const moved = await setSessionWorkspace(deps.db, tenant, sessionId, body.workspace_id);
      if (moved === 'missing_workspace') {
        throw new ParleyError('workspace_not_found', 'workspace_id: no such workspace', {
          field: 'workspace_id',
        });
      }
    }
    const updated =
      body.visibility === undefined && body.members === undefined
        ? true
        : await updateSessionAccess(deps.db, tenant, sessionId, {
            visibility: body.visibility ?? null,
            members: body.members ?? null,
          });
    const found = updated ? await getSession(deps.db, tenant, sessionId) : null;
    if (!found) throw new ParleyError('session_not_found', 'no such session');
    return found;
  });

  api.delete(contracts.delete.url, routeOptions(contracts.delete), async (request, reply) => {
    if (!mayManage(request.principal, request.session)) {
      throw new ParleyError('forbidden', "only the session's owner or an admin may delete it");
    }
    const { tenant } = request.principal;
    const sessionId = request.session.session_id;
    const deleted = await deleteSession(deps.db, {
      tenant,
      sessionId,
      deleteMemories: deps.config.retention.deleteMemories,
    });
    // Deleted meanwhile by someone else: as missing as it now is.
    if (!deleted) throw new ParleyError('session_not_found', 'no such session');
    // What its shell commands left on disk is its text too (a shared volume when split).
    await rm(workspaceDir(deps.config.tools.workspaceDir, tenant, sessionId), {
      recursive: true,
      force: true,
    }).catch((error: unknown) => {
      request.log.warn({ err: (error as Error).message }, 'could not remove the workspace');
    });
    return reply.status(204).send();
  });

  api.get(contracts.messages.url, routeOptions(contracts.messages), async (request) => {
    const query = request.query;
    let before: number | null = null;
    if (query.before !== undefined) {
      // A sequence: at most 15 digits, so it stays an exact integer and a valid bigint.
      if (!/^\d{1,15}$/.test(query.before)) {
        throw new ParleyError('invalid_cursor', 'before: not a cursor');
      }
      before = Number(query.before);
    }
    return listMessages(deps.db, request.principal.tenant, request.session.session_id, {
      before,
      limit: query.limit,
    });
  });
}

/**
 * An admin's edit of the session's domain state: checked against its agent's schema,
 * journaled as `state_changed` (`by: admin`), refused while a turn holds the session.
 */
async function editData(
  deps: ApiDeps,
  principal: Principal,
  access: SessionAccess,
  data: Record<string, unknown>,
): Promise<void> {
  if (!hasRole(principal, 'admin')) {
    throw new ParleyError('forbidden', "only an admin may change a session's state");
  }
  const state = agentsOf(deps).get(principal.tenant, access.agent)?.state ?? null;
  if (state === null) {
    throw new ParleyError('invalid_request', "data: this session's agent keeps no state", {
      field: 'data',
    });
  }
  const invalid = state.validate(data);
  if (invalid !== null) {
    throw new ParleyError('invalid_request', `data: ${invalid}`, { field: 'data' });
  }
  const edited = await editSessionData(deps.db, principal.tenant, access.session_id, data);
  if (edited === 'missing') throw new ParleyError('session_not_found', 'no such session');
  if (edited === 'busy') {
    throw new ParleyError(
      'session_busy',
      'a turn is in flight in this session; try again after it',
    );
  }
}
