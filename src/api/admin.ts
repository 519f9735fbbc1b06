import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ParleyError } from '../errors.js';
import { getSession } from '../store/getSession.js';
import { unparkSession } from '../store/parkSession.js';
import { pruneEvents } from '../store/pruneEvents.js';
import type { ApiDeps } from './deps.js';
import { hasRole } from './principal.js';
import { validate } from './validate.js';

const pruneBody = z
  .object({
    older_than_days: z.number().nonnegative().optional(),
    older_than_seconds: z.number().nonnegative().optional(),
  })
  .strict()
  .refine(
    (body) => (body.older_than_days === undefined) !== (body.older_than_seconds === undefined),
    {
      message: 'give exactly one of older_than_days or older_than_seconds',
    },
  );

/**
 * Operator endpoints behind `parley sessions unpark` and `parley prune`. They go through
 * the API (not the database) so they work on embedded storage, which one process owns.
 * They need the `admin` role (the dev principal has every role); scoped to the tenant.
 */
export function adminRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.addHook('preHandler', async (request) => {
    if (request.url.startsWith('/api/v1/admin/') && !hasRole(request.principal, 'admin')) {
      throw new ParleyError('forbidden', 'this needs the admin role');
    }
  });

  app.post<{ Params: { sessionId: string } }>(
    '/api/v1/admin/sessions/:sessionId/unpark',
    async (request) => {
      const tenant = request.principal.tenant;
      const session = await getSession(deps.db, tenant, request.params.sessionId);
      if (!session) throw new ParleyError('session_not_found', 'no such session');
      if (!(await unparkSession(deps.db, tenant, session.session_id))) {
        throw new ParleyError('session_not_parked', `the session is ${session.state}, not parked`);
      }
      return getSession(deps.db, tenant, session.session_id);
    },
  );

  app.post('/api/v1/admin/prune', async (request) => {
    const body = validate(pruneBody, request.body);
    const ageMs =
      body.older_than_days !== undefined
        ? body.older_than_days * 86_400_000
        : (body.older_than_seconds ?? 0) * 1000;
    const pruned = await pruneEvents(deps.db, {
      olderThan: new Date(Date.now() - ageMs),
      tenant: request.principal.tenant,
    });
    return { pruned_events: pruned.events, sessions: pruned.sessions };
  });
}
