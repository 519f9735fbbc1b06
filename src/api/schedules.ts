import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ParleyError } from '../errors.js';
import { schedule } from '../protocol/missions.js';
import { listSchedules } from '../store/listSchedules.js';
import { switchSchedule } from '../store/switchSchedule.js';
import { route, routeOptions, typed } from './contract.js';
import type { ApiDeps } from './deps.js';
import { hasRole } from './principal.js';
import { pathId, validate } from './validate.js';

const switchBody = z
  .object({
    enabled: z.boolean().meta({
      description:
        'false: the schedule stops firing; true: it fires again, the fire times it passed while off handled by its catch_up',
    }),
  })
  .strict();

export const scheduleContracts = {
  list: route({
    method: 'GET',
    url: '/api/v1/schedules',
    summary: "The tenant's schedules with their switch and their next fire times",
    responses: { '200': z.object({ items: z.array(schedule) }) },
  }),
  update: route({
    method: 'PATCH',
    url: '/api/v1/schedules/:name',
    summary: 'Switch one of the tenant’s schedules on or off (admin)',
    body: switchBody,
    // The role is checked before the body: a caller without it learns nothing of it.
    handlerValidates: true,
    responses: { '200': schedule },
    errors: {
      '400': 'invalid_request',
      '403': 'forbidden',
      '404': 'schedule_not_found (also another tenant’s schedule)',
    },
  }),
};

/**
 * The principal's tenant's schedules (docs/missions.md, "Schedules"): listed with their
 * switch and fire times; a tenant admin switches one on or off. The definitions come from
 * the configuration; the switch is the tenant's, kept in the database. Another tenant's
 * schedule is the same 404 as a missing one.
 */
export function scheduleRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const api = typed(app);
  const { list, update } = scheduleContracts;
  api.get(list.url, routeOptions(list), async (request) => ({
    items: await listSchedules(deps.db, request.principal.tenant),
  }));
  api.patch(update.url, routeOptions(update), async (request) => {
    const { tenant, user } = request.principal;
    if (!hasRole(request.principal, 'admin')) {
      throw new ParleyError('forbidden', 'switching a schedule needs the admin role');
    }
    const name = pathId(request.params.name, 'name');
    const body = validate(update.body, request.body);
    const notFound = () => new ParleyError('schedule_not_found', `no schedule "${name}"`);
    if (!(await switchSchedule(deps.db, { tenant, name, enabled: body.enabled, user }))) {
      throw notFound();
    }
    const [switched] = await listSchedules(deps.db, tenant, name);
    if (!switched) throw notFound();
    return switched;
  });
}
