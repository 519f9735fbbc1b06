import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ParleyError } from '../errors.js';
import { usageReport } from '../store/usageReport.js';
import type { ApiDeps } from './deps.js';
import { hasRole } from './principal.js';
import { validate } from './validate.js';

const usageQuery = z
  .object({
    group_by: z.enum(['tenant', 'agent', 'model']).default('model'),
    from: z.iso.datetime({ offset: true }).optional(),
    to: z.iso.datetime({ offset: true }).optional(),
  })
  .strict()
  .refine((query) => !query.from || !query.to || Date.parse(query.from) <= Date.parse(query.to), {
    message: 'from must not be after to',
    path: ['from'],
  });

/**
 * `GET /api/v1/usage?group_by=tenant|agent|model&from=&to=`: token and cost attribution.
 * Needs the `admin` role and sees the principal's own tenant only (so `group_by=tenant`
 * gives one row); `from` is inclusive, `to` exclusive, both ISO 8601 with an offset.
 */
export function usageRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.get('/api/v1/usage', async (request) => {
    if (!hasRole(request.principal, 'admin')) {
      throw new ParleyError('forbidden', 'usage needs the admin role');
    }
    const query = validate(usageQuery, request.query);
    const from = query.from ? new Date(query.from) : null;
    const to = query.to ? new Date(query.to) : null;
    const report = await usageReport(deps.db, request.principal.tenant, {
      groupBy: query.group_by,
      from,
      to,
    });
    return {
      group_by: query.group_by,
      from: from?.toISOString() ?? null,
      to: to?.toISOString() ?? null,
      ...report,
    };
  });
}
