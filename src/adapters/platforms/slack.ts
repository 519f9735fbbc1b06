import { AsyncResource } from 'node:async_hooks';
import { SlackAdapter } from '@chat-adapter/slack';
import type { SlackConfig } from '../../config/platformTypes.js';
import type { Logger } from '../../log.js';
import { chatLogger } from '../logger.js';
import { verifySlack } from '../verify/slack.js';
import { currentCall, inPlatformCall, requestSignal, sdkCalls } from './call.js';
import {
  secret,
  type Env,
  type LostPost,
  type NativeStream,
  type PlatformClient,
} from './types.js';

type WebClient = SlackAdapter['webClient'];

/** Requests one Web API client sends at once, and how many more may wait for a turn. */
const concurrentRequests = 8;
const waitingRequests = 64;

/** The metadata event type that marks Parley's messages with their outbox row. */
const markerType = 'parley_reply';

function marker(key: string) {
  return { event_type: markerType, event_payload: { reply_id: key } };
}

/** The outbox row a marker names. */
function markedRow(payload: unknown): unknown {
  return (payload as { reply_id?: unknown } | undefined)?.reply_id;
}

/** The Web API client's request queue (p-queue), as far as Parley touches it. */
interface RequestQueue {
  readonly size: number;
  add<T>(task: () => Promise<T>, options?: unknown): Promise<T>;
}

/**
 * A Web API client's queue made bounded and deadline-aware. A call beyond
 * `waitingRequests` waiting is refused at once (the outbox retries it later) instead of
 * piling up behind a Slack that does not answer. A waiting call whose deadline passes
 * leaves at once and its request is never made. And a request runs in its caller's async
 * context (the queue would run it in that of whichever request finished before it), so
 * the interceptor hands it its own call's deadline.
 */
function boundQueue(client: WebClient): WebClient {
  const queue = (client as unknown as { requestQueue: RequestQueue }).requestQueue;
  if ((queue as { bounded?: boolean }).bounded) return client;
  const add = queue.add.bind(queue);
  queue.add = <T>(task: () => Promise<T>, options?: unknown): Promise<T> => {
    if (queue.size >= waitingRequests) {
      return Promise.reject(new Error('too many Slack requests waiting'));
    }
    const signal = currentCall()?.signal;
    return new Promise<T>((resolve, reject) => {
      const leave = () => reject(signal?.reason as Error);
      signal?.addEventListener('abort', leave, { once: true });
      const run = AsyncResource.bind(async () => {
        signal?.removeEventListener('abort', leave);
        signal?.throwIfAborted();
        return task();
      });
      add(run, options).then(resolve, reject);
    });
  };
  (queue as { bounded?: boolean }).bounded = true;
  return client;
}

/**
 * The SDK's Slack adapter with every Web API client bounded (above), and each post
 * marked with its outbox row in the message's metadata, so that a post whose answer was
 * lost can be found in the thread instead of being posted again.
 */
class ParleySlackAdapter extends SlackAdapter {
  constructor(config: ConstructorParameters<typeof SlackAdapter>[0]) {
    super(config);
    const client = boundQueue(this._client);
    const post = client.chat.postMessage;
    client.chat.postMessage = (options) => {
      const key = currentCall()?.key;
      return post(key === undefined ? options : { ...options, metadata: marker(key) });
    };
    // Clients per bot token (`webClient`) are made on first use: bounded as they come.
    const forToken = (this as unknown as { getClientForToken: (token: string) => WebClient })
      .getClientForToken;
    (this as unknown as { getClientForToken: (token: string) => WebClient }).getClientForToken = (
      token,
    ) => boundQueue(forToken.call(this, token));
  }

  /** The bot's id (`B…`), known once the adapter is initialised. */
  get botId(): string | null {
    return this._botId;
  }

  private identifying: Promise<void> | null = null;

  /**
   * Mentions are recognised by the bot's own user id, which the SDK asks Slack for once,
   * at start-up (`auth.test`), carrying on without it when that fails (Slack slow or
   * unreachable then): every mention would keep its `<@U…>` for the process's life. Until
   * the id is known, each event asks again before it is handled.
   */
  override async handleWebhook(
    request: Request,
    options?: Parameters<SlackAdapter['handleWebhook']>[1],
  ): Promise<Response> {
    if (this.defaultBotTokenProvider && this._botUserId === null) await this.identify();
    return super.handleWebhook(request, options);
  }

  private identify(): Promise<void> {
    this.identifying ??= (async () => {
      try {
        const found = await this._client.auth.test(await this.withToken({}));
        this._botUserId = found.user_id ?? null;
        this._botId = found.bot_id ?? null;
      } catch {
        // Still unknown: the next event asks again.
      } finally {
        this.identifying = null;
      }
    })();
    return this.identifying;
  }
}

/**
 * Slack through the Chat SDK's adapter. `api_url` is the Web API base. Parley's outbox
 * owns retries (durably, across restarts), so the Web API client's own are turned off;
 * each request carries the deadline of its call (the client's `timeout` for the SDK's own
 * requests). Replies stream with Slack's own streaming (chat.startStream / appendStream /
 * stopStream) unless `native_streaming: false`.
 */
export function slackClient(config: SlackConfig, env: Env, log: Logger): PlatformClient {
  const signingSecret = secret(env, config.signingSecretEnv);
  const adapter = new ParleySlackAdapter({
    signingSecret,
    botToken: secret(env, config.botTokenEnv),
    ...(config.apiUrl ? { apiUrl: `${config.apiUrl}/` } : {}),
    logger: chatLogger(log, 'slack'),
    webClientOptions: {
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
      timeout: config.timeoutMs,
      maxRequestConcurrency: concurrentRequests,
      requestInterceptor: (request) => {
        request.signal ??= requestSignal(config.timeoutMs);
        return request;
      },
    },
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
    start: (threadId, text, recipient, signal) =>
      inPlatformCall({ signal }, async () => {
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
      }),
    append: (threadId, messageId, text, signal) =>
      inPlatformCall({ signal }, async () => {
        await adapter.webClient.chat.appendStream({
          channel: channelOf(threadId).channel,
          ts: messageId,
          markdown_text: text,
        });
      }),
    // A stream's start cannot carry metadata: its end marks the message as the row's.
    stop: (threadId, messageId, key, signal) =>
      inPlatformCall({ signal }, async () => {
        await adapter.webClient.chat.stopStream({
          channel: channelOf(threadId).channel,
          ts: messageId,
          metadata: marker(key),
        });
      }),
  };

  /**
   * Reads the thread back for a post whose answer was lost: the message marked with the
   * row's id; else a message of the bot's that carries no mark and that no other row of
   * the thread has, no older than the row (a stream whose start was lost: only one row
   * of a thread posts at a time, and every other message of Parley's is marked or
   * known). A found stream is ended, which marks it.
   */
  const findPosted = (threadId: string, lost: LostPost, signal: AbortSignal) =>
    inPlatformCall({ signal }, async () => {
      const { channel, threadTs } = channelOf(threadId);
      // A minute's margin for the difference between Slack's clock and this one.
      const oldest = ((lost.since.getTime() - 60_000) / 1000).toFixed(6);
      const query = { channel, oldest, inclusive: true, include_all_metadata: true, limit: 200 };
      const listed = threadTs
        ? await adapter.webClient.conversations.replies({ ...query, ts: threadTs })
        : await adapter.webClient.conversations.history(query);
      const messages = listed.messages ?? [];
      const marked = messages.find(
        (message) =>
          message.metadata?.event_type === markerType &&
          markedRow(message.metadata.event_payload) === lost.key,
      );
      if (marked?.ts) return marked.ts;
      const ours = (message: { user?: string; bot_id?: string }) =>
        (adapter.botUserId !== undefined && message.user === adapter.botUserId) ||
        (adapter.botId !== null && message.bot_id === adapter.botId);
      const orphan = messages.find(
        (message) =>
          message.ts !== undefined &&
          message.ts !== threadTs &&
          ours(message) &&
          message.metadata?.event_type !== markerType &&
          !lost.known.has(message.ts),
      );
      if (!orphan?.ts) return null;
      await stream.stop(threadId, orphan.ts, lost.key, signal).catch(() => {});
      return orphan.ts;
    });

  return {
    name: 'slack',
    config,
    adapter,
    verify: async (headers, raw) => verifySlack(signingSecret, headers, raw),
    ...sdkCalls(adapter),
    findPosted,
    // Slack's only "working…" indicator for apps is the assistant thread status; outside
    // an assistant thread it is refused, which the sender ignores like any typing failure.
    typing: (threadId, signal) =>
      inPlatformCall({ signal }, async () => {
        const { channel, threadTs } = channelOf(threadId);
        if (!threadTs) return;
        await adapter.webClient.assistant.threads.setStatus({
          channel_id: channel,
          thread_ts: threadTs,
          status: 'is typing…',
        });
      }),
    notify: (threadId, userId, text, signal) =>
      inPlatformCall({ signal }, async () => {
        await adapter.postEphemeral(threadId, userId, { markdown: text });
      }),
    ...(config.nativeStreaming ? { stream } : {}),
  };
}
