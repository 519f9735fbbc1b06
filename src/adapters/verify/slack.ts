import { createHmac, timingSafeEqual } from 'node:crypto';
import { header, type Headers } from './secrets.js';

/** Slack refuses replays older than five minutes; so does Parley. */
const maxAgeSeconds = 5 * 60;

/**
 * Slack's request signature: `v0=` + HMAC-SHA256(signing secret, `v0:{timestamp}:{raw
 * body}`), with a timestamp within five minutes. Checked on the raw bytes, before any
 * parsing.
 */
export function verifySlack(
  secret: string,
  headers: Headers,
  raw: Buffer,
  nowSeconds = Math.floor(Date.now() / 1000),
): boolean {
  const timestamp = header(headers, 'x-slack-request-timestamp');
  const signature = header(headers, 'x-slack-signature');
  if (!timestamp || !signature || !/^\d+$/.test(timestamp)) return false;
  if (Math.abs(nowSeconds - Number(timestamp)) > maxAgeSeconds) return false;
  const expected = Buffer.from(
    `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:`).update(raw).digest('hex')}`,
  );
  const given = Buffer.from(signature);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
