import type { FastifyInstance } from 'fastify';
import { listSchedules } from '../store/listSchedules.js';
import type { ApiDeps } from './deps.js';

/** The principal's tenant's schedules with their next fire times. */
export function scheduleRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.get('/api/v1/schedules', async (request) => ({
    items: await listSchedules(deps.db, request.principal.tenant),
  }));
}
