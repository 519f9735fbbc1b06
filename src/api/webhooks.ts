import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { webhookStatus } from '../store/webhookStatus.js';
import type { ApiDeps } from './deps.js';
import { validate } from './validate.js';

const statusQuery = z.object({
  dead_limit: z.coerce.number().int().min(0).max(500).default(20),
});

/** An endpoint's address without its query or credentials (either may carry a secret). */
function shownUrl(url: string): string {
  const parsed = new URL(url);
  return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
}

/**
 * `GET /api/v1/admin/webhooks` (admin role, the principal's tenant): every configured
 * endpoint with its deliveries by state, the oldest still pending and the last error,
 * and the latest dead letters. What `parley webhooks status` prints.
 */
export function adminWebhookRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.get('/api/v1/admin/webhooks', async (request) => {
    const query = validate(statusQuery, request.query);
    const webhooks = Object.values(deps.config.webhooks);
    const status = await webhookStatus(
      deps.db,
      request.principal.tenant,
      webhooks.map((webhook) => webhook.name),
      query.dead_limit,
    );
    const counts = new Map(status.counts.map((row) => [row.webhook, row]));
    return {
      items: webhooks.map((webhook) => {
        const row = counts.get(webhook.name);
        return {
          name: webhook.name,
          url: shownUrl(webhook.url),
          events: webhook.events,
          pending: row?.pending ?? 0,
          delivered: row?.delivered ?? 0,
          dead: row?.dead ?? 0,
          oldest_pending_at: row?.oldest_pending_at?.toISOString() ?? null,
          last_error: row?.last_attempt_error ?? null,
        };
      }),
      dead_letters: status.dead.map((dead) => ({
        ...dead,
        created_at: dead.created_at.toISOString(),
      })),
    };
  });
}
