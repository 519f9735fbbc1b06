import { GoogleChatAdapter } from '@chat-adapter/gchat';
import type { GchatConfig } from '../../config/platformTypes.js';
import type { Logger } from '../../log.js';
import { chatLogger } from '../logger.js';
import { gchatVerifier } from '../verify/gchat.js';
import { currentCall, inPlatformCall, sdkCalls } from './call.js';
import { ServiceAccountAuth, type ServiceAccountKey } from './googleAuth.js';
import { secret, type Env, type PlatformClient } from './types.js';

const scopes = ['https://www.googleapis.com/auth/chat.bot'];

type CreateParams = { parent?: string; messageId?: string } & Record<string, unknown>;
type Create = (params: CreateParams, ...rest: unknown[]) => Promise<{ data: unknown }>;

/**
 * The SDK's Google Chat adapter, with two changes. Parley verifies every request's token
 * itself (against `jwks_url`) before the SDK sees it, so the SDK's own check, which only
 * knows Google's key URLs, is skipped. And a post carries a client-assigned message id
 * (`client-…`, from the outbox row of the current call): Google refuses a second create
 * with the same id, so a post repeated after a crash or a lost answer updates the first
 * message instead of making another. (Every request's deadline is set by the auth
 * client, through which googleapis sends them all.)
 */
class ParleyGchatAdapter extends GoogleChatAdapter {
  constructor(config: ConstructorParameters<typeof GoogleChatAdapter>[0]) {
    super(config);
    const messages = this.chatApi.spaces.messages as unknown as {
      create: Create;
      update: (params: Record<string, unknown>) => Promise<{ data: unknown }>;
    };
    const create = messages.create.bind(messages);
    messages.create = async (params, ...rest) => {
      const replyKey = currentCall()?.key;
      if (replyKey === undefined) return create(params, ...rest);
      const key = gchatMessageId(replyKey);
      try {
        return await create({ ...params, messageId: key }, ...rest);
      } catch (error) {
        if ((error as { status?: unknown }).status !== 409) throw error;
        // The first create reached Google (its answer was lost): bring that message up
        // to what this post carries, since the reply may have grown meanwhile.
        const body = (params.requestBody ?? {}) as { cardsV2?: unknown };
        return messages.update({
          name: `${String(params.parent)}/messages/${key}`,
          updateMask: body.cardsV2 ? 'cardsV2' : 'text',
          requestBody: body,
        });
      }
    };
  }

  protected override async verifyBearerToken(): Promise<boolean> {
    return true;
  }
}

/** A client-assigned message id: `client-` and at most 63 lower-case letters, digits, `-`. */
export function gchatMessageId(key: string): string {
  return `client-${key.toLowerCase().replace(/[^a-z0-9-]/g, '-')}`.slice(0, 63);
}

export function gchatClient(config: GchatConfig, env: Env, log: Logger): PlatformClient {
  const key = JSON.parse(secret(env, config.credentialsEnv)) as ServiceAccountKey;
  const auth = new ServiceAccountAuth(key, scopes, config.timeoutMs);
  const adapter = new ParleyGchatAdapter({
    auth: auth as unknown as never,
    disableSignatureVerification: true,
    ...(config.endpointUrl ? { endpointUrl: config.endpointUrl } : {}),
    ...(config.apiUrl ? { apiUrl: config.apiUrl } : {}),
    ...(config.botUserId ? { botUserId: config.botUserId } : {}),
    logger: chatLogger(log, 'gchat'),
  });
  const verify = gchatVerifier(config);
  return {
    name: 'gchat',
    config,
    adapter,
    verify: (headers) => verify(headers),
    ...sdkCalls(adapter),
    // Google Chat has no typing indicator for apps.
    typing: async () => {},
    notify: (threadId, userId, text, signal) =>
      inPlatformCall({ signal }, async () => {
        await adapter.postEphemeral(threadId, userId, { markdown: text });
      }),
  };
}
