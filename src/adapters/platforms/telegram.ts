import { TelegramAdapter } from '@chat-adapter/telegram';
import type { TelegramConfig } from '../../config/platformTypes.js';
import type { Logger } from '../../log.js';
import { chatLogger } from '../logger.js';
import { verifyTelegram } from '../verify/telegram.js';
import { requestSignal, sdkCalls } from './call.js';
import { secret, type Env, type PlatformClient } from './types.js';

/**
 * The SDK's Telegram adapter with every Bot API request under a deadline: its request
 * function takes a signal (used for long polling), which the SDK's `postMessage` and
 * friends never pass; here each request gets the current call's (see `call.ts`).
 */
class ParleyTelegramAdapter extends TelegramAdapter {
  constructor(
    config: ConstructorParameters<typeof TelegramAdapter>[0],
    private readonly fallbackMs: number,
  ) {
    super(config);
  }

  protected override telegramFetch<TResult>(
    method: string,
    payload?: Record<string, unknown> | FormData,
    request?: { signal?: AbortSignal },
  ): Promise<TResult> {
    return super.telegramFetch<TResult>(method, payload, {
      ...request,
      signal: request?.signal ?? requestSignal(this.fallbackMs),
    });
  }
}

/**
 * Telegram through the SDK's adapter, in webhook mode only (never long polling: the
 * webhook is what Parley verifies and what retries a failed delivery). Replies are
 * posted, then edited. Telegram has no idempotency key and bots cannot read a chat's
 * history: the recorded message id is what keeps a retry from posting twice, and a post
 * whose answer is lost is posted again (docs/adapters.md, "Never posted twice").
 */
export function telegramClient(config: TelegramConfig, env: Env, log: Logger): PlatformClient {
  const secretToken = secret(env, config.secretTokenEnv);
  const adapter = new ParleyTelegramAdapter(
    {
      botToken: secret(env, config.botTokenEnv),
      secretToken,
      mode: 'webhook',
      ...(config.apiUrl ? { apiUrl: config.apiUrl } : {}),
      logger: chatLogger(log, 'telegram'),
      allowedUserIds: [],
      streamingEditIntervalMs: config.editIntervalMs,
    },
    config.timeoutMs,
  );
  return {
    name: 'telegram',
    config,
    adapter,
    verify: async (headers) => verifyTelegram(secretToken, headers),
    ...sdkCalls(adapter),
  };
}
