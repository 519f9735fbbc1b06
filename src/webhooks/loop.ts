import { monotonicFactory } from 'ulid';
import type { WebhookConfig } from '../config/platformTypes.js';
import { webhookSecretBytes } from '../config/platforms.js';
import type { Logger } from '../log.js';
import { claimWebhookDeliveries, type ClaimedDelivery } from '../store/claimWebhookDeliveries.js';
import type { Db } from '../store/db.js';
import { enqueueWebhookEvents } from '../store/enqueueWebhookEvents.js';
import { nextOutboxDue } from '../store/nextOutboxDue.js';
import { registerWebhooks } from '../store/registerWebhooks.js';
import { webhookSessionsBehind } from '../store/webhookSessionsBehind.js';
import type { Wakeups } from '../store/wakeups.js';
import { sendDelivery, type WebhookEndpoint } from './sender.js';
import { startOutboxLoop, type OutboxKind } from '../work/outboxLoop.js';

export interface WebhookLoopDeps {
  db: Db;
  wakeups: Wakeups;
  webhooks: Record<string, WebhookConfig>;
  env: Record<string, string | undefined>;
  log: Logger;
  pollMs: number;
  /** runtime.lease_ttl_ms: a dead sender's deliveries are taken over after it (or after the endpoint's time limit, if longer). */
  leaseMs: number;
  fetch?: typeof fetch;
}

/** Message ids as Standard Webhooks suggests them: `msg_` and a sortable id. */
const nextUlid = monotonicFactory();
const claimSize = 32;

/**
 * Outbound webhooks as a kind of the engine's outbox work (src/work/outboxLoop.ts; worker
 * role). Following enqueues the new journal events of a session for an endpoint that
 * belongs to the session's tenant and selects their type; sending POSTs a claimed
 * delivery under its lease. Delivery is at least once (a delivery is marked only after the endpoint
 * answered 2xx; a sender that dies leaves it to be sent again, with the same
 * `webhook-id`), in order per session and endpoint, with backoff, and dead-lettered
 * after the endpoint's last attempt.
 */
export async function startWebhooks(deps: WebhookLoopDeps): Promise<{ stop: () => Promise<void> }> {
  const endpoints = new Map<string, WebhookEndpoint>();
  for (const config of Object.values(deps.webhooks)) {
    endpoints.set(config.name, {
      config,
      key: webhookSecretBytes(deps.env[config.secretEnv] ?? '') as Buffer,
    });
  }
  const names = [...endpoints.keys()];
  await registerWebhooks(
    deps.db,
    Object.values(deps.webhooks).map((config) => ({
      webhook: config.name,
      tenants: config.tenants,
    })),
  );
  const sender = {
    db: deps.db,
    log: deps.log,
    fetch: deps.fetch ?? fetch,
    now: Date.now,
    random: Math.random,
  };
  // A dead sender's deliveries are taken over after the lease, or after the slowest
  // endpoint's time limit when that is longer (a live sender's POST ends before it).
  const leaseMs = Math.max(
    deps.leaseMs,
    ...Object.values(deps.webhooks).map((webhook) => webhook.timeoutMs + 1000),
  );

  const kind: OutboxKind<{ webhook: string; sessionId: string }, ClaimedDelivery> = {
    name: 'webhooks',
    batchSize: claimSize,
    behind: async (input) => {
      const found: { webhook: string; sessionId: string }[] = [];
      for (const webhook of names) {
        for (const sessionId of await webhookSessionsBehind(deps.db, { webhook, ...input })) {
          found.push({ webhook, sessionId });
        }
      }
      return found;
    },
    key: ({ webhook, sessionId }) => `${webhook}\u0000${sessionId}`,
    follow: async ({ webhook, sessionId }) => {
      const { more } = await enqueueWebhookEvents(deps.db, sessionId, {
        webhook,
        types: (endpoints.get(webhook) as WebhookEndpoint).config.events,
        newId: () => `msg_${nextUlid()}`,
      });
      return { changed: true, more };
    },
    claim: (token, limit) =>
      claimWebhookDeliveries(deps.db, { webhooks: names, token, leaseMs, limit }),
    send: (delivery, token) =>
      sendDelivery(sender, endpoints.get(delivery.webhook) as WebhookEndpoint, delivery, token),
    nextDueMs: () => nextOutboxDue(deps.db, 'webhooks', names),
  };
  return startOutboxLoop(kind, { wakeups: deps.wakeups, log: deps.log, pollMs: deps.pollMs });
}
