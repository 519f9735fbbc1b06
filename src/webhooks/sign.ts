import { createHmac } from 'node:crypto';

/**
 * Standard Webhooks headers (standardwebhooks.com): the message id (the same on every
 * retry, so a receiver can drop duplicates), the attempt's time in seconds, and
 * `v1,` + base64 HMAC-SHA256 of `{id}.{timestamp}.{body}` with the secret's key bytes.
 */
export function webhookHeaders(
  key: Buffer,
  id: string,
  timestampSeconds: number,
  body: string,
): Record<string, string> {
  const signature = createHmac('sha256', key)
    .update(`${id}.${timestampSeconds}.${body}`)
    .digest('base64');
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': `v1,${signature}`,
  };
}
