import { monotonicFactory } from 'ulid';
import type { WebhookConfig } from '../config/platformTypes.js';
import { webhookSecretBytes } from '../config/platforms.js';
import { newLeaseToken } from '../ids.js';
import type { Logger } from '../log.js';
import { abortableDelay } from '../time/abortable.js';
import { claimWebhookDeliveries } from '../store/claimWebhookDeliveries.js';
import type { Db } from '../store/db.js';
import { enqueueWebhookEvents } from '../store/enqueueWebhookEvents.js';
import { nextWebhookDue } from '../store/nextWebhookDue.js';
import { registerWebhooks } from '../store/registerWebhooks.js';
import { webhookSessionsBehind } from '../store/webhookSessionsBehind.js';
import type { Wakeups } from '../store/wakeups.js';
import { sendDelivery, type WebhookEndpoint } from './sender.js';

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
const fullSweepEvery = 60;

/**
 * The outbound webhooks loop (worker role). Each round: enqueue the new journal events of
 * sessions that woke up (or that the sweep finds behind) for every endpoint that belongs
 * to the session's tenant and selects their type, then POST what is due, then sleep until a wake-up, the next retry, or the
 * poll interval. Delivery is at least once (a delivery is marked only after the endpoint
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
  const stopped = new AbortController();
  const dirty = new Set<string>();
  let wake = new AbortController();
  const unsubscribe = deps.wakeups.subscribe((wakeup) => {
    if (wakeup.kind === 'typing') return;
    dirty.add(wakeup.sessionId);
    wake.abort();
  });
  const sender = {
    db: deps.db,
    log: deps.log,
    fetch: deps.fetch ?? fetch,
    now: Date.now,
    random: Math.random,
  };

  let sweeps = 0;
  let lastSweep = 0;
  const enqueue = async () => {
    // The sweep (for lost wake-ups) runs once per poll interval, however many wake-ups.
    const sweep = Date.now() - lastSweep >= deps.pollMs;
    if (sweep) {
      lastSweep = Date.now();
      sweeps += 1;
    }
    const woken = [...dirty];
    dirty.clear();
    for (const [name, endpoint] of endpoints) {
      const sessions = new Set<string>();
      if (woken.length > 0) {
        for (const id of await webhookSessionsBehind(deps.db, {
          webhook: name,
          sessionIds: woken,
          recentMs: null,
          limit: woken.length,
        })) {
          sessions.add(id);
        }
      }
      const swept = sweep
        ? await webhookSessionsBehind(deps.db, {
            webhook: name,
            recentMs: sweeps % fullSweepEvery === 1 ? null : deps.pollMs * 30,
            limit: 200,
          })
        : [];
      for (const id of swept) sessions.add(id);
      for (const sessionId of sessions) {
        for (;;) {
          const { more } = await enqueueWebhookEvents(deps.db, sessionId, {
            webhook: name,
            types: endpoint.config.events,
            newId: () => `msg_${nextUlid()}`,
          });
          if (!more) break;
        }
      }
    }
  };

  const send = async () => {
    for (;;) {
      const token = newLeaseToken();
      const due = await claimWebhookDeliveries(deps.db, {
        webhooks: names,
        token,
        leaseMs: Math.max(
          deps.leaseMs,
          ...Object.values(deps.webhooks).map((webhook) => webhook.timeoutMs + 1000),
        ),
        limit: claimSize,
      });
      if (due.length === 0) return;
      await Promise.all(
        due.map((delivery) =>
          sendDelivery(sender, endpoints.get(delivery.webhook) as WebhookEndpoint, delivery, token),
        ),
      );
      if (due.length < claimSize) return;
    }
  };

  const loop = (async () => {
    while (!stopped.signal.aborted) {
      wake = new AbortController();
      let sleepMs = deps.pollMs;
      try {
        await enqueue();
        await send();
        const next = await nextWebhookDue(deps.db, names);
        if (next !== null) sleepMs = Math.max(20, Math.min(sleepMs, next));
      } catch (error) {
        deps.log.error({ err: (error as Error).message }, 'webhook round failed');
      }
      if (dirty.size > 0) continue;
      await abortableDelay(sleepMs, AbortSignal.any([wake.signal, stopped.signal]));
    }
  })();

  return {
    stop: async () => {
      stopped.abort();
      unsubscribe();
      await loop;
    },
  };
}
