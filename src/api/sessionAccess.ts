import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Principal } from '../config/types.js';
import { ParleyError, type ErrorCode } from '../errors.js';
import { findTurn, type TurnPlace } from '../store/findTurn.js';
import { findVisibleSession, type SessionAccess } from '../store/findVisibleSession.js';
import type { Viewer } from '../store/visibility.js';
import { agentsOf, type ApiDeps } from './deps.js';
import { hasRole } from './principal.js';
import { pathId } from './validate.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * How this route answers a session that does not exist: a hidden session answers the
     * very same (default `session_not_found`, "no such session").
     */
    missingSession?: { code: ErrorCode; message: string };
  }
  interface FastifyRequest {
    /** The session of a `:sessionId` route, checked visible to the principal. */
    session: SessionAccess;
  }
}

/** The principal as the visibility predicate sees it (store/visibility.ts). */
export function viewerOf(deps: ApiDeps, principal: Principal): Viewer {
  return {
    user: principal.user,
    roles: principal.roles,
    admin: hasRole(principal, 'admin'),
    approverOf: agentsOf(deps)
      .list(principal.tenant)
      .filter(
        (agent) =>
          agent.approverRoles !== null &&
          agent.approverRoles.some((role) => hasRole(principal, role)),
      )
      .map((agent) => agent.name),
  };
}

/** May this principal change or delete the session (its owner, or an admin)? */
export function mayManage(principal: Principal, session: SessionAccess): boolean {
  return (
    hasRole(principal, 'admin') || (session.owner !== null && session.owner === principal.user)
  );
}

/**
 * The one check of every route that names a session in its path (`:sessionId`): detail,
 * transcript, events, cancel, answers, checkpoints, fork, rewind, files, attachments,
 * PATCH, DELETE, and any added later. Before the body is read, a session the principal
 * may not see answers exactly as a missing one (the 404-not-403 rule); the session's
 * access facts are left on the request for routes that need its owner.
 */
export function installSessionAccess(app: FastifyInstance, deps: ApiDeps): void {
  app.decorateRequest('session', undefined as never);
  app.addHook('onRequest', async (request: FastifyRequest) => {
    const params = request.params as { sessionId?: unknown } | undefined;
    if (typeof params?.sessionId !== 'string' || request.principal === undefined) return;
    const sessionId = pathId(params.sessionId, 'session_id');
    const found = await findVisibleSession(
      deps.db,
      request.principal.tenant,
      sessionId,
      viewerOf(deps, request.principal),
    );
    if (!found) {
      const missing = request.routeOptions.config.missingSession;
      throw new ParleyError(
        missing?.code ?? 'session_not_found',
        missing?.message ?? 'no such session',
      );
    }
    request.session = found;
  });
}

/**
 * A turn by its id, with its session, if the principal may see that session; null
 * otherwise (what it may not see is as missing as no turn). The protocol adapters' lookup
 * of a response or a task.
 */
export async function findVisibleTurn(
  deps: ApiDeps,
  principal: Principal,
  turnId: string,
): Promise<{ place: TurnPlace; session: SessionAccess } | null> {
  const place = await findTurn(deps.db, principal.tenant, turnId);
  if (!place) return null;
  const session = await findVisibleSession(
    deps.db,
    principal.tenant,
    place.session_id,
    viewerOf(deps, principal),
  );
  return session ? { place, session } : null;
}
