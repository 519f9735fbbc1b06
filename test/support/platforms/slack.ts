import { createHmac } from 'node:crypto';
import { FakePlatform } from './server.js';

export interface SlackMessage {
  ts: string;
  channel: string;
  thread_ts: string | undefined;
  text: string;
  blocks: any[] | undefined;
  streaming: boolean;
  /** Every text the message has shown, in order (posts, appends, updates). */
  history: string[];
  /** The message's metadata (`event_type`, `event_payload`), if it was given any. */
  metadata: { event_type: string; event_payload: Record<string, unknown> } | undefined;
  /** When the message was posted (epoch ms): the window of a reply posted twice. */
  posted_at: number;
}

/**
 * Slack's Web API, as much as Parley uses: messages (post, update, ephemeral), Slack's
 * streaming (start, append, stop), reading a thread or a conversation back (with the
 * messages' metadata when asked), users.info, auth.test. Messages are kept by ts; the
 * bot is UBOT / BBOT.
 */
export class FakeSlack {
  readonly messages = new Map<string, SlackMessage>();
  readonly ephemeral: { channel: string; user: string; text: string }[] = [];
  private next = 1;

  constructor(readonly server: FakePlatform) {
    const ok = (extra: Record<string, unknown> = {}) => ({ json: { ok: true, ...extra } });
    const metadata = (body: any) => (body.metadata ? JSON.parse(body.metadata) : undefined);
    const listed = (messages: SlackMessage[], body: any) =>
      ok({
        messages: messages
          .filter((message) => body.oldest === undefined || message.ts >= body.oldest)
          .map((message) => ({
            type: 'message',
            ts: message.ts,
            thread_ts: message.thread_ts,
            user: 'UBOT',
            bot_id: 'BBOT',
            text: message.text,
            ...(body.include_all_metadata === 'true' && message.metadata
              ? { metadata: message.metadata }
              : {}),
          })),
        has_more: false,
      });
    const post = (body: any, streaming: boolean) => {
      const ts = `1800000000.${String(this.next++).padStart(6, '0')}`;
      const text = body.markdown_text ?? body.text ?? '';
      const blocks = body.blocks ? JSON.parse(body.blocks) : undefined;
      this.messages.set(ts, {
        ts,
        channel: body.channel,
        thread_ts: body.thread_ts,
        text,
        blocks,
        streaming,
        history: [text],
        metadata: metadata(body),
        posted_at: Date.now(),
      });
      return ok({ ts, channel: body.channel });
    };
    server
      .on('POST /api/auth.test', () => ok({ user_id: 'UBOT', bot_id: 'BBOT', user: 'parley' }))
      .on('POST /api/users.info', (call) =>
        ok({
          user: {
            id: call.body.user,
            name: call.body.user,
            profile: { display_name: call.body.user },
          },
        }),
      )
      .on('POST /api/chat.postMessage', (call) => post(call.body, false))
      .on('POST /api/chat.startStream', (call) => post(call.body, true))
      .on('POST /api/chat.appendStream', (call) => {
        const message = this.messages.get(call.body.ts);
        if (!message?.streaming)
          return { json: { ok: false, error: 'message_not_in_streaming_state' } };
        message.text += call.body.markdown_text ?? '';
        message.history.push(message.text);
        return ok({ ts: call.body.ts });
      })
      .on('POST /api/chat.stopStream', (call) => {
        const message = this.messages.get(call.body.ts);
        if (!message?.streaming)
          return { json: { ok: false, error: 'message_not_in_streaming_state' } };
        message.streaming = false;
        message.metadata = metadata(call.body) ?? message.metadata;
        return ok({ ts: call.body.ts });
      })
      .on('POST /api/chat.update', (call) => {
        const message = this.messages.get(call.body.ts);
        if (!message) return { json: { ok: false, error: 'message_not_found' } };
        message.text = call.body.markdown_text ?? call.body.text ?? '';
        message.blocks = call.body.blocks ? JSON.parse(call.body.blocks) : undefined;
        message.history.push(message.text);
        return ok({ ts: call.body.ts });
      })
      .on('POST /api/chat.postEphemeral', (call) => {
        this.ephemeral.push({
          channel: call.body.channel,
          user: call.body.user,
          text: call.body.markdown_text ?? call.body.text ?? '',
        });
        return ok({ message_ts: '1' });
      })
      .on('POST /api/conversations.replies', (call) =>
        listed(
          [...this.messages.values()].filter(
            (message) =>
              message.channel === call.body.channel && message.thread_ts === call.body.ts,
          ),
          call.body,
        ),
      )
      .on('POST /api/conversations.history', (call) =>
        listed(
          [...this.messages.values()].filter(
            (message) => message.channel === call.body.channel && message.thread_ts === undefined,
          ),
          call.body,
        ),
      )
      .on('POST /api/assistant.threads.setStatus', () => ok())
      .on('POST /api/conversations.info', (call) => ok({ channel: { id: call.body.channel } }));
  }

  static async start(): Promise<FakeSlack> {
    return new FakeSlack(await FakePlatform.start());
  }

  get apiUrl(): string {
    return `${this.server.url}/api`;
  }

  /** The bot's messages in one thread, oldest first. */
  thread(channel: string, threadTs: string): SlackMessage[] {
    return [...this.messages.values()].filter(
      (message) => message.channel === channel && message.thread_ts === threadTs,
    );
  }

  close(): Promise<void> {
    return this.server.close();
  }
}

/** A request body and headers signed as Slack signs them. */
export function slackSigned(
  secret: string,
  body: string,
  contentType = 'application/json',
  timestamp = Math.floor(Date.now() / 1000),
): { body: string; headers: Record<string, string> } {
  const signature = `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:${body}`).digest('hex')}`;
  return {
    body,
    headers: {
      'content-type': contentType,
      'x-slack-request-timestamp': String(timestamp),
      'x-slack-signature': signature,
    },
  };
}

/** An Events API callback for a message (or a mention of the bot). */
export function slackMessageEvent(input: {
  user: string;
  text: string;
  ts: string;
  channel: string;
  threadTs?: string;
  mention?: boolean;
  eventId?: string;
}): string {
  return JSON.stringify({
    type: 'event_callback',
    team_id: 'T1',
    event_id: input.eventId ?? `Ev${input.ts.replace('.', '')}`,
    event: {
      type: input.mention ? 'app_mention' : 'message',
      user: input.user,
      text: input.mention ? `<@UBOT> ${input.text}` : input.text,
      ts: input.ts,
      ...(input.threadTs ? { thread_ts: input.threadTs } : {}),
      channel: input.channel,
      channel_type: input.channel.startsWith('D') ? 'im' : 'channel',
      team: 'T1',
    },
  });
}

/** A block_actions payload: `user` pressed the button `actionId` with `value`. */
export function slackButtonPress(input: {
  user: string;
  actionId: string;
  value: string;
  channel: string;
  messageTs: string;
  threadTs: string;
}): string {
  const payload = {
    type: 'block_actions',
    user: { id: input.user, username: input.user, name: input.user },
    channel: { id: input.channel },
    container: { type: 'message', channel_id: input.channel, message_ts: input.messageTs },
    message: { ts: input.messageTs, thread_ts: input.threadTs },
    trigger_id: 'trigger',
    actions: [{ action_id: input.actionId, value: input.value, type: 'button' }],
  };
  return new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
}
