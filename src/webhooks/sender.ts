import type { WebhookConfig } from '../config/platformTypes.js';
import type { Logger } from '../log.js';
import type { ClaimedDelivery } from '../store/claimWebhookDeliveries.js';
import type { Db } from '../store/db.js';
import { DeadlineError, withDeadline } from '../time/abortable.js';
import { recordWebhookAttempt } from '../store/recordWebhookAttempt.js';
import { backoffMs } from '../time/backoff.js';
import { webhookHeaders } from './sign.js';

/** The longest wait between two attempts of a delivery. */
const maxWebhookBackoffMs = 600_000;

export interface WebhookEndpoint {
  config: WebhookConfig;
  /** The signing key (the secret's bytes). */
  key: Buffer;
}

export interface WebhookSenderDeps {
  db: Db;
  log: Logger;
  fetch: typeof fetch;
  now: () => number;
  random: () => number;
}

/**
 * POSTs one delivery: JSON, signed per attempt, no redirect followed (a 3xx is a
 * failure), within the endpoint's time limit. Any 2xx delivers it; anything else is
 * retried with backoff (doubling from `retry_base_ms` with half jitter, at most ten
 * minutes) until `max_attempts`, then the delivery is dead-lettered.
 */
export async function sendDelivery(
  deps: WebhookSenderDeps,
  endpoint: WebhookEndpoint,
  delivery: ClaimedDelivery,
  token: string,
): Promise<void> {
  const body = JSON.stringify(delivery.payload);
  const { config } = endpoint;
  let status: number | null = null;
  let error: string | null = null;
  try {
    const response = await withDeadline(config.timeoutMs, (signal) =>
      deps.fetch(config.url, {
        method: 'POST',
        redirect: 'manual',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Parley-Webhooks',
          ...webhookHeaders(
            endpoint.key,
            delivery.delivery_id,
            Math.floor(deps.now() / 1000),
            body,
          ),
        },
        body,
        signal,
      }),
    );
    status = response.status;
    // The body is not read: nothing of the receiver's answer is kept or logged.
    await response.body?.cancel().catch(() => {});
    if (status < 200 || status >= 300) error = `HTTP ${status}`;
  } catch (failure) {
    error =
      failure instanceof DeadlineError ? failure.message : 'the endpoint could not be reached';
  }
  await recordOutcome(deps, { webhook: config.name }, delivery, token, { status, error }, config);
}

/**
 * Records one POST's outcome: delivered (any 2xx), or failed with backoff (doubling from
 * `retryBaseMs` with half jitter, at most ten minutes) until `maxAttempts`, then
 * dead-lettered. A failure is logged with `labels` and the delivery id, never the body.
 */
export async function recordOutcome(
  deps: WebhookSenderDeps,
  labels: Record<string, string>,
  delivery: { delivery_id: string; attempts: number },
  token: string,
  outcome: { status: number | null; error: string | null },
  policy: { retryBaseMs: number; maxAttempts: number },
): Promise<void> {
  const { status, error } = outcome;
  const delay =
    error === null
      ? 0
      : backoffMs(policy.retryBaseMs, delivery.attempts + 1, deps.random, maxWebhookBackoffMs);
  if (error !== null) {
    deps.log.warn(
      { ...labels, delivery_id: delivery.delivery_id, attempt: delivery.attempts + 1, err: error },
      'webhook delivery failed',
    );
  }
  await recordWebhookAttempt(deps.db, {
    deliveryId: delivery.delivery_id,
    token,
    status,
    delivered: error === null,
    error,
    nextAfterMs: delay,
    maxAttempts: policy.maxAttempts,
  });
}
