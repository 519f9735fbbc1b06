import { rm } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ParleyError } from '../errors.js';
import { newSessionId } from '../ids.js';
import { createSession } from '../store/createSession.js';
import { deleteSession } from '../store/deleteSession.js';
import { getSession } from '../store/getSession.js';
import { listMessages } from '../store/listMessages.js';
import { decodeCursor, listSessions } from '../store/listSessions.js';
import { updateSessionAccess } from '../store/updateSessionAccess.js';
import { workspaceDir } from '../tools/shell/workspace.js';
import { agentsOf, type ApiDeps } from './deps.js';
import { mayManage, viewerOf } from './sessionAccess.js';
import { pathId, text, validate } from './validate.js';

const visibility = z.enum(['private', 'tenant', 'room']);
/** A room's members: user names, each listed once. */
const members = z
  .array(text().min(1).max(128))
  .max(200)
  .transform((names) => [...new Set(names)]);
const createBody = z
  .object({
    agent: text().min(1).max(128).optional(),
    title: text().max(500).optional(),
    visibility: visibility.optional(),
    members: members.optional(),
  })
  .strict();
const updateBody = z
  .object({ visibility: visibility.optional(), members: members.optional() })
  .strict()
  .refine((body) => body.visibility !== undefined || body.members !== undefined, {
    message: 'give visibility, members or both',
  });
const pageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: text().max(500).optional(),
  before: text().max(500).optional(),
});

type SessionParams = { Params: { sessionId: string } };

/**
 * PROTOCOL.md §1: create, list (cursor), detail projection, transcript (backward cursor);
 * and, Parley's own, change who sees a session (PATCH) and delete it (DELETE). Every
 * `:sessionId` route is reached only for a session the principal may see
 * (sessionAccess.ts); the list shows only those.
 */
export function sessionRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.post('/api/v1/chat/sessions', async (request, reply) => {
    const body = validate(createBody, request.body);
    const { tenant, user } = request.principal;
    const agents = agentsOf(deps);
    const agent = body.agent ?? agents.defaultName(tenant);
    const agentConfig = agents.get(tenant, agent);
    if (!agentConfig) throw new ParleyError('unknown_agent', `no agent named "${agent}"`);
    const sessionId = newSessionId();
    await deps.db.transaction((tx) =>
      createSession(tx, {
        tenant,
        sessionId,
        agent,
        title: body.title ?? null,
        greeting: agentConfig.greeting,
        owner: user,
        visibility: body.visibility ?? agentConfig.visibility,
        members: body.members ?? [],
      }),
    );
    return reply.status(201).send(await getSession(deps.db, tenant, sessionId));
  });

  app.get('/api/v1/chat/sessions', async (request) => {
    const query = validate(pageQuery, request.query);
    let cursor = null;
    if (query.cursor !== undefined) {
      const parts = decodeCursor(query.cursor);
      const [updatedAt, sessionId] = parts ?? [];
      if (
        typeof updatedAt !== 'string' ||
        typeof sessionId !== 'string' ||
        Number.isNaN(Date.parse(updatedAt)) ||
        !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(updatedAt)
      ) {
        throw new ParleyError('invalid_cursor', 'cursor: not a cursor this server made');
      }
      cursor = { updatedAt, sessionId: pathId(sessionId, 'cursor') };
    }
    const principal = request.principal;
    return listSessions(deps.db, principal.tenant, viewerOf(deps, principal), {
      limit: query.limit,
      cursor,
    });
  });

  app.get<SessionParams>('/api/v1/chat/sessions/:sessionId', async (request) => {
    const session = await getSession(deps.db, request.principal.tenant, request.session.session_id);
    if (!session) throw new ParleyError('session_not_found', 'no such session');
    return session;
  });

  app.patch<SessionParams>('/api/v1/chat/sessions/:sessionId', async (request) => {
    const body = validate(updateBody, request.body);
    const tenant = request.principal.tenant;
    if (!mayManage(request.principal, request.session)) {
      throw new ParleyError(
        'forbidden',
        "only the session's owner or an admin may change who sees it",
      );
    }
    const updated = await updateSessionAccess(deps.db, tenant, request.session.session_id, {
      visibility: body.visibility ?? null,
      members: body.members ?? null,
    });
    const session = updated ? await getSession(deps.db, tenant, request.session.session_id) : null;
    if (!session) throw new ParleyError('session_not_found', 'no such session');
    return session;
  });

  app.delete<SessionParams>('/api/v1/chat/sessions/:sessionId', async (request, reply) => {
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

  app.get<SessionParams>('/api/v1/chat/sessions/:sessionId/messages', async (request) => {
    const query = validate(pageQuery, request.query);
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
