import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from './support/poll.js';
import { FakeSlack, slackMessageEvent, slackSigned } from './support/platforms/slack.js';
import { FakeTelegram, telegramMessageUpdate } from './support/platforms/telegram.js';
import { startTestServer, type TestServer } from './support/server.js';

// Every platform call has a deadline that aborts its request. A platform that acts on a
// post but answers after the deadline must not get the reply twice (Slack is read back
// for the post's marker), and one that never answers "typing…" must hold up nobody.

const signingSecret = 'slack-signing-secret-made-by-the-test';
const botToken = '777777:deadline-token-made-by-the-test';
const secretToken = 'deadline-secret-made-by-the-test';
const sendChatAction = `POST /bot${botToken}/sendChatAction`;
let slack: FakeSlack;
let telegram: FakeTelegram;
let server: TestServer;
let next = 1;

async function slackEvent(body: string) {
  const signed = slackSigned(signingSecret, body);
  const response = await fetch(`${server.url}/adapters/slack/events`, {
    method: 'POST',
    headers: signed.headers,
    body: signed.body,
  });
  expect(response.status).toBe(200);
}

async function telegramMessage(chatId: number, text: string) {
  const n = next++;
  const response = await fetch(`${server.url}/adapters/telegram/webhook`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': secretToken },
    body: telegramMessageUpdate({ updateId: 5000 + n, chatId, messageId: n, userId: 42, text }),
  });
  expect(response.status).toBe(200);
}

function inChannel(channel: string) {
  return [...slack.messages.values()].filter((message) => message.channel === channel);
}

beforeAll(async () => {
  slack = await FakeSlack.start();
  telegram = await FakeTelegram.start(botToken);
  const platform = {
    timeout_ms: 400,
    typing_timeout_ms: 300,
    edit_interval_ms: 20,
    retry_base_ms: 50,
  };
  server = await startTestServer(
    {
      adapters: {
        slack: {
          tenant: 'acme',
          signing_secret_env: 'SLACK_SIGNING_SECRET',
          bot_token_env: 'SLACK_BOT_TOKEN',
          api_url: slack.apiUrl,
          ...platform,
        },
        telegram: {
          tenant: 'acme',
          bot_token_env: 'TG_BOT_TOKEN',
          secret_token_env: 'TG_SECRET',
          api_url: telegram.server.url,
          ...platform,
        },
      },
    },
    {
      SLACK_SIGNING_SECRET: signingSecret,
      SLACK_BOT_TOKEN: 'xoxb-test-token',
      TG_BOT_TOKEN: botToken,
      TG_SECRET: secretToken,
      PARLEY_DEMO_DELAY_MS: '60',
    },
  );
});

afterAll(async () => {
  telegram?.server.release();
  await server?.close();
  await slack?.close();
  await telegram?.close();
});

describe('platform calls under a deadline', () => {
  it('posts a reply once when Slack answers its post after the deadline', async () => {
    const channel = `D${next++}`;
    // Slack makes the message at once and answers the post only after the deadline.
    slack.server.late('POST /api/chat.postMessage', 1, 1500);
    await slackEvent(
      slackMessageEvent({
        user: 'U_BOB',
        text: 'answered too late',
        ts: '1712000000.000001',
        channel,
      }),
    );
    const messages = await until(
      () => inChannel(channel),
      (found) => found.some((message) => /You said: answered too late/.test(message.text)),
      'the final reply',
    );
    // Given every chance to post again, it did not: the lost post was found and edited.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect(inChannel(channel)).toHaveLength(1);
    expect(messages[0]?.text).toContain('You said: answered too late');
    const reply = await server.db.query<{ reply_id: string; platform_message_id: string }>(
      `select r.reply_id, r.platform_message_id from adapter_replies r
         join adapter_threads t on t.session_id = r.session_id
        where t.thread_id like $1`,
      [`slack:${channel}:%`],
    );
    expect(reply.rows).toEqual([
      { reply_id: expect.any(String), platform_message_id: messages[0]?.ts },
    ]);
    expect(messages[0]?.metadata).toEqual({
      event_type: 'parley_reply',
      event_payload: { reply_id: reply.rows[0]?.reply_id },
    });
    const lookups = slack.server
      .callsTo('POST /api/conversations.history')
      .filter((call) => call.body.channel === channel);
    expect(lookups.length).toBeGreaterThan(0);
  });

  it('posts a reply once when Slack carries its post out after the deadline', async () => {
    const channel = `D${next++}`;
    // Slack takes the post and makes the message only after the deadline has ended the
    // attempt: a read-back right after the failure finds nothing yet.
    slack.server.slow('POST /api/chat.postMessage', 1, 700);
    await slackEvent(
      slackMessageEvent({
        user: 'U_BOB',
        text: 'carried out too late',
        ts: '1712000000.000002',
        channel,
      }),
    );
    await until(
      () => inChannel(channel),
      (found) => found.some((message) => /You said: carried out too late/.test(message.text)),
      'the final reply',
    );
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect(inChannel(channel).map((message) => message.text)).toEqual([
      expect.stringContaining('You said: carried out too late'),
    ]);
    expect(slack.server.abandoned.some((call) => call.body.channel === channel)).toBe(true);
  });

  it('streams a reply once when Slack answers the start of its stream after the deadline', async () => {
    const channel = `C${next++}`;
    const ts = '1712000000.000002';
    slack.server.late('POST /api/chat.startStream', 1, 1500);
    await slackEvent(
      slackMessageEvent({ user: 'U_BOB', text: 'stream started late', ts, channel, mention: true }),
    );
    await until(
      () => slack.thread(channel, ts),
      (found) =>
        found.some(
          (message) => !message.streaming && /You said: stream started late/.test(message.text),
        ),
      'the final reply',
    );
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const messages = slack.thread(channel, ts);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({
      streaming: false,
      metadata: { event_type: 'parley_reply' },
    });
    expect(
      slack.server
        .callsTo('POST /api/chat.startStream')
        .filter((call) => call.body.channel === channel),
    ).toHaveLength(1);
  });

  it('shows a streamed reply whole when Slack answers an append after the deadline', async () => {
    const channel = `C${next++}`;
    const ts = '1712000000.000004';
    // Slack appends at once and answers only after the deadline: the delivery counts as
    // failed, and sending the same text again would show it twice.
    slack.server.late('POST /api/chat.appendStream', 1, 1500);
    const text = 'appended late one two three four five six';
    await slackEvent(slackMessageEvent({ user: 'U_BOB', text, ts, channel, mention: true }));
    await until(
      () => slack.thread(channel, ts),
      (found) => found.some((message) => !message.streaming && message.text.includes('five six')),
      'the final reply',
    );
    const messages = slack.thread(channel, ts);
    expect(messages).toHaveLength(1);
    expect(messages[0]?.text).toBe(`You said: ${text}`);
  });

  it("sends every platform's replies while Telegram never answers typing", async () => {
    telegram.server.hold(sendChatAction);
    const channel = `C${next++}`;
    const ts = '1712000000.000003';
    await telegramMessage(6001, 'typing never answers');
    await slackEvent(
      slackMessageEvent({ user: 'U_BOB', text: 'meanwhile on slack', ts, channel, mention: true }),
    );
    await until(
      () => telegram.server.heldCount(sendChatAction),
      (held) => held > 0,
      'a typing call that gets no answer',
    );
    await until(
      () => slack.thread(channel, ts),
      (found) =>
        found.some(
          (message) => !message.streaming && /You said: meanwhile on slack/.test(message.text),
        ),
      "Slack's reply",
    );
    await until(
      () => telegram.inChat('6001'),
      (found) => found.some((message) => /You said: typing never answers/.test(message.text)),
      "Telegram's own reply",
    );
    // A second turn in the same chat is answered too, typing still unanswered.
    await telegramMessage(6001, 'and again');
    await until(
      () => telegram.inChat('6001'),
      (found) => found.some((message) => /You said: and again/.test(message.text)),
      "Telegram's second reply",
    );
    expect(telegram.inChat('6001')).toHaveLength(2);
  });
});
