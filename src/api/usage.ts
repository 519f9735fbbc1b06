import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ParleyError } from '../errors.js';
import { usageReport } from '../store/usageReport.js';
import { route, routeOptions, typed } from './contract.js';
import type { ApiDeps } from './deps.js';
import { hasRole } from './principal.js';
import { validate } from './validate.js';

const groupBy = z.enum(['tenant', 'agent', 'model', 'user', 'day']).meta({
  description:
    'agent: key null for text spoken outside a session (POST /api/v1/speech); user: whom each call was for (the author of the turn it answered, else the session owner; key null when unknown); day: the UTC date of each call (key YYYY-MM-DD, oldest first, days without usage left out)',
});

const usageQuery = z
  .object({
    group_by: groupBy.default('model'),
    from: z.iso.datetime({ offset: true }).optional(),
    to: z.iso.datetime({ offset: true }).optional(),
  })
  .strict()
  .refine((query) => !query.from || !query.to || Date.parse(query.from) <= Date.parse(query.to), {
    message: 'from must not be after to',
    path: ['from'],
  });

const totals = {
  calls: z.number().int(),
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  cached_input_tokens: z.number().int(),
  reasoning_tokens: z.number().int(),
  cost_usd: z.number(),
};

export const usageContracts = {
  report: route({
    method: 'GET',
    url: '/api/v1/usage',
    summary: "Token and cost attribution for the principal's tenant (admin role)",
    querystring: usageQuery,
    // The role is checked before the query: a caller without it learns nothing of the query.
    handlerValidates: true,
    responses: {
      '200': z.object({
        group_by: groupBy,
        from: z.string().nullable(),
        to: z.string().nullable(),
        items: z.array(z.object({ key: z.string().nullable(), ...totals })),
        total: z.object(totals),
      }),
    },
    errors: { '400': 'invalid_request', '403': 'forbidden' },
  }),
};

/**
 * `GET /api/v1/usage?group_by=tenant|agent|model|user|day&from=&to=`: token and cost
 * attribution. Needs the `admin` role and sees the principal's own tenant only (so
 * `group_by=tenant` gives one row); `from` is inclusive, `to` exclusive, both ISO 8601
 * with an offset. `day` groups by the UTC date (a day the window cuts counts only its part
 * inside it).
 */
export function usageRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const report = usageContracts.report;
  typed(app).get(report.url, routeOptions(report), async (request) => {
    if (!hasRole(request.principal, 'admin')) {
      throw new ParleyError('forbidden', 'usage needs the admin role');
    }
    const query = validate(report.querystring, request.query);
    const from = query.from ? new Date(query.from) : null;
    const to = query.to ? new Date(query.to) : null;
    const totalsOf = await usageReport(deps.db, request.principal.tenant, {
      groupBy: query.group_by,
      from,
      to,
    });
    return {
      group_by: query.group_by,
      from: from?.toISOString() ?? null,
      to: to?.toISOString() ?? null,
      ...totalsOf,
    };
  });
}
