import { DiscordAdapter } from '@chat-adapter/discord';
import type { AdapterPostableMessage } from 'chat';
import type { DiscordConfig } from '../../config/platformTypes.js';
import type { Logger } from '../../log.js';
import { chatLogger } from '../logger.js';
import { verifyDiscord } from '../verify/discord.js';
import { inPlatformCall, requestSignal, sdkCalls } from './call.js';
import { secret, type Env, type PlatformClient } from './types.js';

/** Discord's JSON error codes the SDK acts on. */
const unknownMessage = 10008;
const threadAlreadyCreated = 160004;

/** A Discord API answer other than 2xx: its status and Discord's own error code. */
class DiscordHttpError extends Error {
  readonly code: number | undefined;

  constructor(
    readonly status: number,
    body: string,
  ) {
    super(`Discord API error: ${status}`);
    this.name = 'DiscordHttpError';
    try {
      const parsed = JSON.parse(body) as { code?: unknown };
      this.code = typeof parsed.code === 'number' ? parsed.code : undefined;
    } catch {
      this.code = undefined;
    }
  }
}

function discordCode(error: unknown): number | undefined {
  return error instanceof DiscordHttpError ? error.code : undefined;
}

/**
 * The SDK's Discord adapter with an idempotent post: Discord deduplicates a message
 * create by `nonce` when `enforce_nonce` is set, so a post repeated after a crash (the
 * first reached Discord, its id was never recorded) returns, and updates, the first
 * message instead of making a second.
 */
class ParleyDiscordAdapter extends DiscordAdapter {
  /** Deadline of a request made outside a platform call (the SDK's inbound look-ups). */
  fallbackMs = 10_000;

  /**
   * The SDK's request function, with the request under the current call's deadline (the
   * SDK's own passes no signal, so a hung Discord would hold the call for ever). A
   * refusal carries its status and Discord's error code, which the two overrides below
   * read where the SDK reads its own (unexported) error class.
   */
  protected override async discordFetch(
    path: string,
    method: string,
    body?: unknown,
  ): Promise<Response> {
    const botToken = await this.resolveBotToken();
    const response = await fetch(`${this.apiBaseUrl}${path}`, {
      method,
      headers: {
        Authorization: `Bot ${botToken}`,
        ...(body ? { 'Content-Type': 'application/json' } : {}),
      },
      ...(body ? { body: JSON.stringify(body) } : {}),
      signal: requestSignal(this.fallbackMs),
    });
    if (!response.ok) throw new DiscordHttpError(response.status, await response.text());
    return response;
  }

  /** A mention whose thread exists already (a repeated event) reuses it, as the SDK does. */
  protected override async createDiscordThread(channelId: string, messageId: string) {
    try {
      return await super.createDiscordThread(channelId, messageId);
    } catch (error) {
      if (discordCode(error) !== threadAlreadyCreated) throw error;
      return { id: messageId, name: 'Thread' };
    }
  }

  /** A thread's starter message lives in the parent channel: retried there, as the SDK does. */
  protected override async withMessageChannel<T>(
    threadId: string,
    messageId: string,
    operation: (channelId: string) => Promise<T>,
  ): Promise<T> {
    const { channelId, threadId: discordThreadId } = this.decodeThreadId(threadId);
    try {
      return await super.withMessageChannel(threadId, messageId, operation);
    } catch (error) {
      if (discordThreadId !== messageId || discordCode(error) !== unknownMessage) throw error;
      return operation(channelId);
    }
  }

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
  adapter.fallbackMs = config.timeoutMs;
  return {
    name: 'discord',
    config,
    adapter,
    verify: async (headers, raw) => verifyDiscord(config.publicKey, botToken, headers, raw),
    ...sdkCalls(adapter),
    post: (threadId, message, key, signal) =>
      inPlatformCall({ signal, key }, () => adapter.postOnce(threadId, message, discordNonce(key))),
    // An interaction's ephemeral follow-up needs its token, gone once the request ended:
    // the notice is a thread message naming the person.
    notify: (threadId, userId, text, signal) =>
      inPlatformCall({ signal }, async () => {
        await adapter.postMessage(threadId, { markdown: `<@${userId}> ${text}` });
      }),
  };
}
