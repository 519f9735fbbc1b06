import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { schedule } from '../protocol/missions.js';
import { listSchedules } from '../store/listSchedules.js';
import { route, routeOptions, typed } from './contract.js';
import type { ApiDeps } from './deps.js';

export const scheduleContracts = {
  list: route({
    method: 'GET',
    url: '/api/v1/schedules',
    summary: "The tenant's schedules with their next fire times",
    responses: { '200': z.object({ items: z.array(schedule) }) },
  }),
};

/** The principal's tenant's schedules with their next fire times. */
export function scheduleRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const list = scheduleContracts.list;
  typed(app).get(list.url, routeOptions(list), async (request) => ({
    items: await listSchedules(deps.db, request.principal.tenant),
  }));
}
