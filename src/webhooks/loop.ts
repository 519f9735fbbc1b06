import { monotonicFactory } from 'ulid';
import type { WebhookConfig } from '../config/platformTypes.js';
import { webhookSecretBytes } from '../config/platforms.js';
import type { Logger } from '../log.js';
import { a2aPushesBehind } from '../store/a2aPushesBehind.js';
import { claimA2aPushDeliveries, type ClaimedA2aPush } from '../store/claimA2aPushDeliveries.js';
import { claimWebhookDeliveries, type ClaimedDelivery } from '../store/claimWebhookDeliveries.js';
import type { Db } from '../store/db.js';
import { enqueueA2aPushes } from '../store/enqueueA2aPushes.js';
import { enqueueWebhookEvents } from '../store/enqueueWebhookEvents.js';
import { nextOutboxDue } from '../store/nextOutboxDue.js';
import { registerWebhooks } from '../store/registerWebhooks.js';
import { webhookSessionsBehind } from '../store/webhookSessionsBehind.js';
import type { Wakeups } from '../store/wakeups.js';
import { sendA2aPush, type A2aPushes } from './a2aPushSender.js';
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
  /** A2A push notifications (null: off), as one more target of the same deliveries. */
  a2aPushes?: A2aPushes | null;
}

/** What the loop follows: a session for a configured endpoint, or a push config's task. */
type Followed = { webhook: string; sessionId: string } | { pushId: string };
type Claimed =
  ({ target: 'webhook' } & ClaimedDelivery) | ({ target: 'a2a_push' } & ClaimedA2aPush);

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
 * after the endpoint's last attempt. A2A push notifications (a2aPushSender.ts) are deliveries
 * of the same table and the same rules, targeting a push config instead of an endpoint:
 * each config follows its task's journal, its notifications in order of their own.
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
  const pushes = deps.a2aPushes ?? null;
  const leaseMs = Math.max(
    deps.leaseMs,
    ...Object.values(deps.webhooks).map((webhook) => webhook.timeoutMs + 1000),
    pushes ? pushes.timeoutMs + 1000 : 0,
  );
  const newId = () => `msg_${nextUlid()}`;

  const kind: OutboxKind<Followed, Claimed> = {
    name: 'webhooks',
    batchSize: claimSize,
    behind: async (input) => {
      const found: Followed[] = [];
      for (const webhook of names) {
        for (const sessionId of await webhookSessionsBehind(deps.db, { webhook, ...input })) {
          found.push({ webhook, sessionId });
        }
      }
      if (pushes) {
        for (const pushId of await a2aPushesBehind(deps.db, input)) found.push({ pushId });
      }
      return found;
    },
    key: (followed) =>
      'pushId' in followed
        ? `a2a_push\u0000${followed.pushId}`
        : `${followed.webhook}\u0000${followed.sessionId}`,
    follow: async (followed) => {
      if ('pushId' in followed) {
        const composer = (pushes as A2aPushes).composer;
        await enqueueA2aPushes(deps.db, followed.pushId, { composer, newId });
        return { changed: true, more: false };
      }
      const { more } = await enqueueWebhookEvents(deps.db, followed.sessionId, {
        webhook: followed.webhook,
        types: (endpoints.get(followed.webhook) as WebhookEndpoint).config.events,
        newId,
      });
      return { changed: true, more };
    },
    claim: async (token, limit) => {
      const claimed: Claimed[] = [];
      if (names.length > 0) {
        const rows = await claimWebhookDeliveries(deps.db, {
          webhooks: names,
          token,
          leaseMs,
          limit,
        });
        for (const row of rows) claimed.push({ target: 'webhook', ...row });
      }
      if (pushes && claimed.length < limit) {
        const rows = await claimA2aPushDeliveries(deps.db, {
          token,
          leaseMs,
          limit: limit - claimed.length,
        });
        for (const row of rows) claimed.push({ target: 'a2a_push', ...row });
      }
      return claimed;
    },
    send: (delivery, token) =>
      delivery.target === 'a2a_push'
        ? sendA2aPush(sender, pushes as A2aPushes, delivery, token)
        : sendDelivery(sender, endpoints.get(delivery.webhook) as WebhookEndpoint, delivery, token),
    nextDueMs: async () => {
      const due = await Promise.all([
        names.length > 0 ? nextOutboxDue(deps.db, 'webhooks', names) : null,
        pushes ? nextOutboxDue(deps.db, 'a2aPushes', ['a2a_push']) : null,
      ]);
      const known = due.filter((ms): ms is number => ms !== null);
      return known.length > 0 ? Math.min(...known) : null;
    },
  };
  return startOutboxLoop(kind, { wakeups: deps.wakeups, log: deps.log, pollMs: deps.pollMs });
}
