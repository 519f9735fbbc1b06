import { TelegramAdapter } from '@chat-adapter/telegram';
import type { TelegramConfig } from '../../config/platformTypes.js';
import type { Logger } from '../../log.js';
import { chatLogger } from '../logger.js';
import { verifyTelegram } from '../verify/telegram.js';
import { secret, type Env, type PlatformClient } from './types.js';

/**
 * Telegram through the SDK's adapter, in webhook mode only (never long polling: the
 * webhook is what Parley verifies and what retries a failed delivery). Replies are
 * posted, then edited (Telegram has no idempotency key: the recorded message id is what
 * keeps a retry from posting twice).
 */
export function telegramClient(config: TelegramConfig, env: Env, log: Logger): PlatformClient {
  const secretToken = secret(env, config.secretTokenEnv);
  const adapter = new TelegramAdapter({
    botToken: secret(env, config.botTokenEnv),
    secretToken,
    mode: 'webhook',
    ...(config.apiUrl ? { apiUrl: config.apiUrl } : {}),
    logger: chatLogger(log, 'telegram'),
    allowedUserIds: [],
    streamingEditIntervalMs: config.editIntervalMs,
  });
  return {
    name: 'telegram',
    config,
    adapter,
    verify: async (headers) => verifyTelegram(secretToken, headers),
    post: async (threadId, message) => (await adapter.postMessage(threadId, message)).id,
    edit: async (threadId, messageId, message) => {
      await adapter.editMessage(threadId, messageId, message);
    },
    typing: (threadId) => adapter.startTyping(threadId),
    notify: async (threadId, _userId, text) => {
      await adapter.postMessage(threadId, { markdown: text });
    },
  };
}
