import { DiscordAdapter } from '@chat-adapter/discord';
import type { AdapterPostableMessage } from 'chat';
import type { DiscordConfig } from '../../config/platformTypes.js';
import type { Logger } from '../../log.js';
import { chatLogger } from '../logger.js';
import { verifyDiscord } from '../verify/discord.js';
import { secret, type Env, type PlatformClient } from './types.js';

/**
 * The SDK's Discord adapter with an idempotent post: Discord deduplicates a message
 * create by `nonce` when `enforce_nonce` is set, so a post repeated after a crash (the
 * first reached Discord, its id was never recorded) returns, and updates, the first
 * message instead of making a second.
 */
class ParleyDiscordAdapter extends DiscordAdapter {
  /**
   * An edit replaces the message's buttons too: Discord keeps the old components when
   * an edit leaves them out, so a resolved approval would keep its buttons.
   */
  protected override buildMessagePayload(
    message: AdapterPostableMessage,
    options?: { clearContentForCard?: boolean },
  ) {
    const built = super.buildMessagePayload(message, options);
    if (options?.clearContentForCard) built.payload.components ??= [];
    return built;
  }

  async postOnce(threadId: string, message: AdapterPostableMessage, nonce: string) {
    const { channelId, threadId: discordThreadId } = this.decodeThreadId(threadId);
    const { payload } = this.buildMessagePayload(message);
    const response = await this.discordFetch(
      `/channels/${discordThreadId ?? channelId}/messages`,
      'POST',
      { ...payload, nonce, enforce_nonce: true },
    );
    const created = (await response.json()) as { id?: unknown; content?: unknown };
    if (typeof created.id !== 'string') throw new Error('Discord returned no message id');
    // A nonce Discord had seen returns the first message as it was posted: bring it up to
    // what this post carries (the reply may have grown since).
    if ((created.content ?? '') !== (payload.content ?? '')) {
      await this.editMessage(threadId, created.id, message);
    }
    return created.id;
  }
}

/** Discord's nonce is at most 25 characters: a ULID without its first (slowest) one. */
export function discordNonce(key: string): string {
  return key.slice(-25);
}

export function discordClient(config: DiscordConfig, env: Env, log: Logger): PlatformClient {
  const botToken = secret(env, config.botTokenEnv);
  const adapter = new ParleyDiscordAdapter({
    publicKey: config.publicKey,
    applicationId: config.applicationId,
    botToken,
    ...(config.apiUrl ? { apiUrl: config.apiUrl } : {}),
    logger: chatLogger(log, 'discord'),
    respondToChannelIds: [],
    mentionRoleIds: [],
  });
  return {
    name: 'discord',
    config,
    adapter,
    verify: async (headers, raw) => verifyDiscord(config.publicKey, botToken, headers, raw),
    post: (threadId, message, key) => adapter.postOnce(threadId, message, discordNonce(key)),
    edit: async (threadId, messageId, message) => {
      await adapter.editMessage(threadId, messageId, message);
    },
    typing: (threadId) => adapter.startTyping(threadId),
    // An interaction's ephemeral follow-up needs its token, gone once the request ended:
    // the notice is a thread message naming the person.
    notify: async (threadId, userId, text) => {
      await adapter.postMessage(threadId, { markdown: `<@${userId}> ${text}` });
    },
  };
}
