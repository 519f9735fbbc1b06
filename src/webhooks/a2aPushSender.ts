import type { ClaimedA2aPush } from '../store/claimA2aPushDeliveries.js';
import type { A2aPushComposer } from '../store/enqueueA2aPushes.js';
import { DeadlineError, withDeadline } from '../time/abortable.js';
import { recordOutcome, type WebhookSenderDeps } from './sender.js';

/**
 * A2A push notifications as the webhook loop sends them. What a notification is, and how
 * it reaches its URL, is the A2A server's (injected: src/api/a2a/pushNotifications.ts);
 * this loop makes it durable: followed from the journal, sent at least once, in order per
 * config, retried with backoff, dead-lettered, the same `webhook-id` on every attempt.
 */
export interface A2aPushes {
  composer: A2aPushComposer;
  /**
   * POSTs one notification to its config's URL (checked again at send time); resolves to
   * the HTTP status. A refusal rejects with a message fit to keep: no credentials, no
   * token, no path or query of the URL.
   */
  post(push: ClaimedA2aPush, signal: AbortSignal): Promise<number>;
  timeoutMs: number;
  maxAttempts: number;
  retryBaseMs: number;
}

/** Sends one claimed notification and records the outcome under `token`; never throws. */
export async function sendA2aPush(
  deps: WebhookSenderDeps,
  pushes: A2aPushes,
  delivery: ClaimedA2aPush,
  token: string,
): Promise<void> {
  let status: number | null = null;
  let error: string | null = null;
  try {
    status = await withDeadline(pushes.timeoutMs, (signal) => pushes.post(delivery, signal));
    if (status < 200 || status >= 300) error = `HTTP ${status}`;
  } catch (failure) {
    error =
      failure instanceof DeadlineError || failure instanceof Error
        ? failure.message
        : 'the endpoint could not be reached';
  }
  await recordOutcome(
    deps,
    { a2a_push: delivery.push_id },
    delivery,
    token,
    { status, error },
    pushes,
  );
}
