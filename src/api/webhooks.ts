import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { WebhookConfig } from '../config/platformTypes.js';
import { webhookStatus } from '../store/webhookStatus.js';
import { timestamp } from '../protocol/rest.js';
import { route, routeOptions, typed } from './contract.js';
import type { ApiDeps } from './deps.js';

const statusQuery = z.object({
  dead_limit: z.coerce.number().int().min(0).max(500).default(20),
});

const endpointStatus = z.object({
  name: z.string(),
  scope: z.enum(['tenant', 'all']).meta({
    description:
      "tenant: the endpoint names this tenant; all: it receives every tenant's events (an endpoint of the operator's)",
  }),
  url: z.string().nullable().meta({
    description:
      "without query or credentials; null for an endpoint of every tenant (its address is the operator's)",
  }),
  events: z.array(z.string()),
  pending: z.number().int(),
  delivered: z.number().int(),
  dead: z.number().int(),
  oldest_pending_at: timestamp.nullable(),
  last_error: z.string().nullable(),
});

const deadLetter = z.object({
  delivery_id: z.string(),
  webhook: z.string(),
  session_id: z.string(),
  sequence: z.number().int(),
  event_type: z.string(),
  attempts: z.number().int(),
  last_status: z.number().int().nullable(),
  last_error: z.string().nullable(),
  created_at: timestamp,
});

export const webhookContracts = {
  status: route({
    method: 'GET',
    url: '/api/v1/admin/webhooks',
    summary:
      "Outbound webhooks' deliveries by state and the latest dead letters, for the principal's tenant (admin role): the endpoints that name the tenant, and those of every tenant without their address",
    querystring: statusQuery,
    responses: {
      '200': z.object({ items: z.array(endpointStatus), dead_letters: z.array(deadLetter) }),
    },
    errors: { '400': 'invalid_request', '403': 'forbidden' },
  }),
};

/** An endpoint's address without its query or credentials (either may carry a secret). */
function shownUrl(url: string): string {
  const parsed = new URL(url);
  return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
}

/** Who asks for the webhooks' status. */
export interface WebhookViewer {
  tenant: string;
  /**
   * An operator of the deployment (an operator key) sees every endpoint and the address of
   * each.
   */
  operator: boolean;
}

/** An endpoint as a viewer may see it: `url` null where its address is not theirs to see. */
export interface VisibleWebhook {
  webhook: WebhookConfig;
  /** `tenant`: it belongs to tenants by name; `all`: to every tenant (the operator's). */
  scope: 'tenant' | 'all';
  url: string | null;
}

/**
 * The endpoints a viewer may see. A tenant's admin sees the endpoints that name their
 * tenant, with their address (never which other tenants share one), and the endpoints of
 * every tenant (`*`, the operator's) without their address: such an endpoint receives
 * this tenant's events too, and the admin may know that it does, where it goes is the
 * operator's. Another tenant's endpoints are not shown at all. An operator sees all.
 */
export function webhooksVisibleTo(
  webhooks: Iterable<WebhookConfig>,
  viewer: WebhookViewer,
): VisibleWebhook[] {
  const visible: VisibleWebhook[] = [];
  for (const webhook of webhooks) {
    if (webhook.tenants === '*') {
      visible.push({ webhook, scope: 'all', url: viewer.operator ? shownUrl(webhook.url) : null });
    } else if (viewer.operator || webhook.tenants.includes(viewer.tenant)) {
      visible.push({ webhook, scope: 'tenant', url: shownUrl(webhook.url) });
    }
  }
  return visible;
}

/**
 * `GET /api/v1/admin/webhooks` (admin role, the principal's tenant): the endpoints the
 * principal may see (`webhooksVisibleTo`) with the tenant's deliveries by state, the
 * oldest still pending and the last error, and the tenant's latest dead letters. What
 * `parley webhooks status` prints.
 */
export function adminWebhookRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const status = webhookContracts.status;
  typed(app).get(status.url, routeOptions(status), async (request) => {
    const query = request.query;
    const visible = webhooksVisibleTo(Object.values(deps.config.webhooks), {
      tenant: request.principal.tenant,
      operator: request.principal.operator,
    });
    const found = await webhookStatus(
      deps.db,
      request.principal.tenant,
      visible.map(({ webhook }) => webhook.name),
      query.dead_limit,
    );
    const counts = new Map(found.counts.map((row) => [row.webhook, row]));
    return {
      items: visible.map(({ webhook, scope, url }) => {
        const row = counts.get(webhook.name);
        return {
          name: webhook.name,
          scope,
          url,
          events: webhook.events,
          pending: row?.pending ?? 0,
          delivered: row?.delivered ?? 0,
          dead: row?.dead ?? 0,
          oldest_pending_at: row?.oldest_pending_at?.toISOString() ?? null,
          last_error: row?.last_attempt_error ?? null,
        };
      }),
      dead_letters: found.dead.map((dead) => ({
        ...dead,
        created_at: dead.created_at.toISOString(),
      })),
    };
  });
}
