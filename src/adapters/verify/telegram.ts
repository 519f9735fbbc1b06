import { header, sameSecret, type Headers } from './secrets.js';

/** Telegram sends the `secret_token` given to setWebhook in a header, nothing else. */
export function verifyTelegram(secretToken: string, headers: Headers): boolean {
  return sameSecret(header(headers, 'x-telegram-bot-api-secret-token'), secretToken);
}
