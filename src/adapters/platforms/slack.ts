import { SlackAdapter } from '@chat-adapter/slack';
import type { SlackConfig } from '../../config/platformTypes.js';
import type { Logger } from '../../log.js';
import { chatLogger } from '../logger.js';
import { verifySlack } from '../verify/slack.js';
import { secret, type Env, type NativeStream, type PlatformClient } from './types.js';

/**
 * Slack through the Chat SDK's adapter. `api_url` is the Web API base. Parley's outbox
 * owns retries (durably, across restarts), so the Web API client's own are turned off.
 * Replies stream with Slack's own streaming (chat.startStream / appendStream /
 * stopStream) unless `native_streaming: false`.
 */
export function slackClient(config: SlackConfig, env: Env, log: Logger): PlatformClient {
  const signingSecret = secret(env, config.signingSecretEnv);
  const adapter = new SlackAdapter({
    signingSecret,
    botToken: secret(env, config.botTokenEnv),
    ...(config.apiUrl ? { apiUrl: `${config.apiUrl}/` } : {}),
    logger: chatLogger(log, 'slack'),
    webClientOptions: { retryConfig: { retries: 0 }, rejectRateLimitedCalls: true },
    nativeStreaming: config.nativeStreaming,
  });
  const channelOf = (threadId: string) => adapter.decodeThreadId(threadId);

  const stream: NativeStream = {
    // Slack streams only into a thread, and outside a direct message only to a known
    // recipient (the user and workspace of the message that ran the turn).
    available(threadId, recipient) {
      const { channel, threadTs } = channelOf(threadId);
      if (!threadTs) return false;
      return channel.startsWith('D') || (recipient.userId !== null && recipient.teamId !== null);
    },
    async start(threadId, text, recipient) {
      const { channel, threadTs } = channelOf(threadId);
      const started = await adapter.webClient.chat.startStream({
        channel,
        thread_ts: threadTs,
        markdown_text: text,
        ...(recipient.userId ? { recipient_user_id: recipient.userId } : {}),
        ...(recipient.teamId ? { recipient_team_id: recipient.teamId } : {}),
      });
      if (!started.ts) throw new Error('chat.startStream returned no ts');
      return started.ts;
    },
    async append(threadId, messageId, text) {
      await adapter.webClient.chat.appendStream({
        channel: channelOf(threadId).channel,
        ts: messageId,
        markdown_text: text,
      });
    },
    async stop(threadId, messageId) {
      await adapter.webClient.chat.stopStream({
        channel: channelOf(threadId).channel,
        ts: messageId,
      });
    },
  };

  return {
    name: 'slack',
    config,
    adapter,
    verify: async (headers, raw) => verifySlack(signingSecret, headers, raw),
    post: async (threadId, message) => (await adapter.postMessage(threadId, message)).id,
    edit: async (threadId, messageId, message) => {
      await adapter.editMessage(threadId, messageId, message);
    },
    // Slack's only "working…" indicator for apps is the assistant thread status; outside
    // an assistant thread it is refused, which the sender ignores like any typing failure.
    typing: async (threadId) => {
      const { channel, threadTs } = channelOf(threadId);
      if (!threadTs) return;
      await adapter.webClient.assistant.threads.setStatus({
        channel_id: channel,
        thread_ts: threadTs,
        status: 'is typing…',
      });
    },
    notify: async (threadId, userId, text) => {
      await adapter.postEphemeral(threadId, userId, { markdown: text });
    },
    ...(config.nativeStreaming ? { stream } : {}),
  };
}
