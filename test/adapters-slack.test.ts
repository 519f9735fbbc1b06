import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from './support/poll.js';
import {
  FakeSlack,
  slackButtonPress,
  slackMessageEvent,
  slackSigned,
} from './support/platforms/slack.js';
import { startTestServer, type TestServer } from './support/server.js';

const secret = 'slack-signing-secret-made-by-the-test';
let slack: FakeSlack;
let server: TestServer;
let nextTs = 1;

/** A fresh thread: a channel of its own and a new root timestamp. */
function newThread() {
  const n = nextTs++;
  return { channel: `C${n}`, ts: `1712345678.${String(n).padStart(6, '0')}` };
}

async function deliver(
  body: string,
  contentType = 'application/json',
  extra: Record<string, string> = {},
) {
  const signed = slackSigned(secret, body, contentType);
  const response = await fetch(`${server.url}/adapters/slack/events`, {
    method: 'POST',
    headers: { ...signed.headers, ...extra },
    body: signed.body,
  });
  return { status: response.status, body: await response.text() };
}

async function count(sql: string, params: unknown[]): Promise<number> {
  const result = await server.db.query<{ n: number }>(sql, params);
  return Number(result.rows[0]?.n ?? 0);
}

function finalText(channel: string, ts: string) {
  return until(
    () => slack.thread(channel, ts),
    (messages) => messages.some((message) => !message.streaming && /You said/.test(message.text)),
    'the final reply in Slack',
  );
}

beforeAll(async () => {
  slack = await FakeSlack.start();
  server = await startTestServer(
    {
      agents: {
        default: {
          tools: { calculator: 'approve', ask_user: 'allow' },
          trigger_roles: ['member', 'reviewer'],
          approver_roles: ['reviewer'],
        },
      },
      adapters: {
        slack: {
          tenant: 'acme',
          signing_secret_env: 'SLACK_SIGNING_SECRET',
          bot_token_env: 'SLACK_BOT_TOKEN',
          api_url: slack.apiUrl,
          users: {
            U_ALICE: { user: 'alice', roles: ['reviewer'] },
            U_BOB: { user: 'bob', roles: ['member'] },
          },
          default_roles: ['guest'],
          edit_interval_ms: 20,
          retry_base_ms: 50,
        },
      },
    },
    // The demo model streams a word every 60 ms, so replies arrive in several deltas.
    {
      SLACK_SIGNING_SECRET: secret,
      SLACK_BOT_TOKEN: 'xoxb-test-token',
      PARLEY_DEMO_DELAY_MS: '60',
    },
  );
});

afterAll(async () => {
  await server?.close();
  await slack?.close();
});

describe('Slack through the Chat SDK', () => {
  it('turns a mention into one turn and one streamed reply in the thread', async () => {
    const thread = newThread();
    const answer = await deliver(
      slackMessageEvent({
        user: 'U_BOB',
        text: 'hello parley',
        ts: thread.ts,
        channel: thread.channel,
        mention: true,
      }),
    );
    expect(answer.status).toBe(200);
    const messages = await finalText(thread.channel, thread.ts);
    expect(messages).toHaveLength(1);
    const reply = messages[0]!;
    // Slack's own streaming: the message grew by appends, then the stream was stopped.
    expect(slack.server.callsTo('POST /api/chat.startStream').length).toBeGreaterThan(0);
    expect(reply.history.length).toBeGreaterThan(1);
    expect(slack.server.callsTo('POST /api/chat.appendStream').length).toBeGreaterThan(0);
    expect(reply.text).toContain('You said:');
    expect(reply.text).toContain('hello parley');
    const startCall = slack.server
      .callsTo('POST /api/chat.startStream')
      .find((call) => call.body.channel === thread.channel)!;
    expect(startCall.body).toMatchObject({
      thread_ts: thread.ts,
      recipient_user_id: 'U_BOB',
      recipient_team_id: 'T1',
    });
    // The thread is a session, the message its one turn, authored by the configured user.
    const turns = await server.db.query<{ turn_id: string; state: string }>(
      `select t.turn_id, t.state from turns t join adapter_threads a on a.session_id = t.session_id
        where a.thread_id = $1`,
      [`slack:${thread.channel}:${thread.ts}`],
    );
    expect(turns.rows).toHaveLength(1);
    // Dotted (a namespace no API client can write), as docs/adapters.md says.
    expect(turns.rows[0]?.turn_id).toMatch(/^slack\.C\d+\.1712345678_\d+\.[0-9a-f]{12}$/);
    const author = await server.db.query<{ author: string; tenant: string }>(
      `select author, tenant from messages where turn_id = $1 and role = 'user'`,
      [turns.rows[0]?.turn_id],
    );
    expect(author.rows[0]).toEqual({ author: 'bob', tenant: 'acme' });
  });

  it('answers a webhook delivered twice once', async () => {
    const thread = newThread();
    const event = slackMessageEvent({
      user: 'U_BOB',
      text: 'only once',
      ts: thread.ts,
      channel: thread.channel,
      mention: true,
    });
    expect((await deliver(event)).status).toBe(200);
    expect((await deliver(event, 'application/json', { 'x-slack-retry-num': '1' })).status).toBe(
      200,
    );
    await finalText(thread.channel, thread.ts);
    const threadId = `slack:${thread.channel}:${thread.ts}`;
    expect(
      await count(
        `select count(*) as n from turns t join adapter_threads a on a.session_id = t.session_id where a.thread_id = $1`,
        [threadId],
      ),
    ).toBe(1);
    // Give a second reply every chance to appear before counting.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(slack.thread(thread.channel, thread.ts)).toHaveLength(1);
  });

  it('refuses a bad signature with 401 and writes nothing', async () => {
    const thread = newThread();
    const before = await count('select count(*) as n from sessions', []);
    const body = slackMessageEvent({
      user: 'U_BOB',
      text: 'forged',
      ts: thread.ts,
      channel: thread.channel,
      mention: true,
    });
    const forged = slackSigned('not-the-secret', body);
    const response = await fetch(`${server.url}/adapters/slack/events`, {
      method: 'POST',
      headers: forged.headers,
      body: forged.body,
    });
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ error: 'invalid_signature' });
    const stale = slackSigned(
      secret,
      body,
      'application/json',
      Math.floor(Date.now() / 1000) - 600,
    );
    const replayed = await fetch(`${server.url}/adapters/slack/events`, {
      method: 'POST',
      headers: stale.headers,
      body: stale.body,
    });
    expect(replayed.status).toBe(401);
    expect(await count('select count(*) as n from sessions', [])).toBe(before);
    expect(
      await count('select count(*) as n from chat_state_subscriptions', []),
    ).toBeLessThanOrEqual(before);
  });

  it("stores a non-trigger user's message in a followed thread without answering it", async () => {
    const thread = newThread();
    await deliver(
      slackMessageEvent({
        user: 'U_BOB',
        text: 'first',
        ts: thread.ts,
        channel: thread.channel,
        mention: true,
      }),
    );
    await finalText(thread.channel, thread.ts);
    const eveTs = `${thread.ts.split('.')[0]}.9${thread.ts.split('.')[1]?.slice(1)}`;
    const answer = await deliver(
      slackMessageEvent({
        user: 'U_EVE',
        text: 'just a remark',
        ts: eveTs,
        threadTs: thread.ts,
        channel: thread.channel,
      }),
    );
    expect(answer.status).toBe(200);
    const stored = await until(
      () =>
        server.db.query<{ state: string; author: string }>(
          `select t.state, m.author from turns t join messages m on m.turn_id = t.turn_id and m.role = 'user'
            join adapter_threads a on a.session_id = t.session_id
           where a.thread_id = $1 and m.content = 'just a remark'`,
          [`slack:${thread.channel}:${thread.ts}`],
        ),
      (result) => result.rows.length === 1,
      'the stored post',
    );
    expect(stored.rows[0]).toEqual({ state: 'stored', author: 'slack:U_EVE' });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(slack.thread(thread.channel, thread.ts)).toHaveLength(1);
  });

  it('refuses an approval pressed without the role, then runs the tool when an approver presses', async () => {
    const thread = newThread();
    await deliver(
      slackMessageEvent({
        user: 'U_BOB',
        text: '/tool calculator {"expression": "6*7"}',
        ts: thread.ts,
        channel: thread.channel,
        mention: true,
      }),
    );
    const card = await until(
      () => slack.thread(thread.channel, thread.ts).find((message) => message.blocks !== undefined),
      (found) => found !== undefined,
      'the approval card',
    );
    const buttons = card!.blocks!.flatMap((block: any) => block.elements ?? []);
    const approve = buttons.find((button: any) => button.action_id === 'p.a');
    expect(approve).toBeDefined();
    expect(JSON.stringify(card!.blocks)).toContain('calculator');

    const press = (user: string) =>
      deliver(
        slackButtonPress({
          user,
          actionId: 'p.a',
          value: approve.value,
          channel: thread.channel,
          messageTs: card!.ts,
          threadTs: thread.ts,
        }),
        'application/x-www-form-urlencoded',
      );
    expect((await press('U_BOB')).status).toBe(200);
    await until(
      () => slack.ephemeral.filter((notice) => notice.user === 'U_BOB'),
      (notices) => notices.some((notice) => /reviewer/.test(notice.text)),
      'the refusal notice',
    );
    const pending = await server.db.query<{ state: string }>(
      `select r.state from input_requests r join adapter_threads a on a.session_id = r.session_id
        where a.thread_id = $1`,
      [`slack:${thread.channel}:${thread.ts}`],
    );
    expect(pending.rows.map((row) => row.state)).toEqual(['pending']);

    expect((await press('U_ALICE')).status).toBe(200);
    const answered = await until(
      () => slack.thread(thread.channel, thread.ts),
      (messages) =>
        messages.some(
          (message) => /Tool calculator returned: .*42/.test(message.text) && !message.streaming,
        ),
      'the reply quoting the tool result',
    );
    const resolvedCard = answered.find((message) => message.ts === card!.ts)!;
    expect(JSON.stringify(resolvedCard.blocks)).toContain('Approved by alice');
    expect(JSON.stringify(resolvedCard.blocks)).not.toContain('"p.a"');
    const resolved = await server.db.query<{ actor: unknown }>(
      `select r.actor from input_requests r join adapter_threads a on a.session_id = r.session_id
        where a.thread_id = $1`,
      [`slack:${thread.channel}:${thread.ts}`],
    );
    expect(resolved.rows[0]?.actor).toEqual({ user: 'alice', tenant: 'acme' });
  });

  it('refuses the press of a card whose digest is not the request’s, as a stale web answer', async () => {
    const thread = newThread();
    const threadId = `slack:${thread.channel}:${thread.ts}`;
    await deliver(
      slackMessageEvent({
        user: 'U_BOB',
        text: '/tool calculator {"expression": "2*21"}',
        ts: thread.ts,
        channel: thread.channel,
        mention: true,
      }),
    );
    const card = await until(
      () => slack.thread(thread.channel, thread.ts).find((message) => message.blocks !== undefined),
      (found) => found !== undefined,
      'the approval card',
    );
    const buttons = card!.blocks!.flatMap((block: any) => block.elements ?? []);
    const approve = buttons.find((button: any) => button.action_id === 'p.a');
    const request = await server.db.query<{ arguments_digest: string }>(
      `select r.arguments_digest from input_requests r
         join adapter_threads a on a.session_id = r.session_id where a.thread_id = $1`,
      [threadId],
    );
    const digest = request.rows[0]?.arguments_digest as string;
    const [replyId, digits] = (approve.value as string).split('.');
    expect(digits).toBe(digest.slice(0, 8));
    const press = (value: string) =>
      deliver(
        slackButtonPress({
          user: 'U_ALICE',
          actionId: 'p.a',
          value,
          channel: thread.channel,
          messageTs: card!.ts,
          threadTs: thread.ts,
        }),
        'application/x-www-form-urlencoded',
      );
    const notices = () => slack.ephemeral.filter((notice) => /no longer shows/.test(notice.text));
    const state = async () =>
      (
        await server.db.query<{ state: string }>(
          `select r.state from input_requests r
             join adapter_threads a on a.session_id = r.session_id where a.thread_id = $1`,
          [threadId],
        )
      ).rows.map((row) => row.state);

    // A press naming other digits than its card's.
    expect((await press(`${replyId}.00000000`)).status).toBe(200);
    await until(notices, (found) => found.length >= 1, 'the refusal of the other digits');
    expect(await state()).toEqual(['pending']);
    // A card that shows other arguments than the request's: the answer is stale (409).
    const other = 'f'.repeat(64);
    await server.db.query(
      `update adapter_replies set content = jsonb_set(content, '{arguments_digest}', to_jsonb($2::text))
        where reply_id = $1`,
      [replyId, other],
    );
    expect((await press(`${replyId}.${other.slice(0, 8)}`)).status).toBe(200);
    await until(notices, (found) => found.length >= 2, 'the refusal of the stale card');
    expect(await state()).toEqual(['pending']);
    // The card as it was: the press answers the request.
    await server.db.query(
      `update adapter_replies set content = jsonb_set(content, '{arguments_digest}', to_jsonb($2::text))
        where reply_id = $1`,
      [replyId, digest],
    );
    expect((await press(approve.value)).status).toBe(200);
    await until(state, (states) => states[0] === 'answered', 'the answer');
  });

  it('offers options as buttons; a press chooses one', async () => {
    const thread = newThread();
    await deliver(
      slackMessageEvent({
        user: 'U_BOB',
        text: '/options red|green',
        ts: thread.ts,
        channel: thread.channel,
        mention: true,
      }),
    );
    const offer = await until(
      () =>
        slack
          .thread(thread.channel, thread.ts)
          .find((message) => JSON.stringify(message.blocks ?? []).includes('"p.o"')),
      (found) => found !== undefined,
      'the options',
    );
    const buttons = offer!.blocks!.flatMap((block: any) => block.elements ?? []);
    const green = buttons.find((button: any) => button.text?.text === 'green');
    expect(green).toBeDefined();
    const answer = await deliver(
      slackButtonPress({
        user: 'U_BOB',
        actionId: 'p.o',
        value: green.value,
        channel: thread.channel,
        messageTs: offer!.ts,
        threadTs: thread.ts,
      }),
      'application/x-www-form-urlencoded',
    );
    expect(answer.status).toBe(200);
    await until(
      () => slack.thread(thread.channel, thread.ts),
      (messages) =>
        messages.some((message) => message.ts === offer!.ts && message.text.includes('✓ green')) &&
        messages.some(
          (message) => /Selected option: green/.test(message.text) && !message.streaming,
        ),
      'the chosen option and its answer',
    );
  });

  it('posts once when the platform fails twice and then succeeds', async () => {
    const thread = newThread();
    // The first two calls that would post the reply (a stream's start, or a post) fail.
    slack.server.fail('POST /api/chat.*', 2, 500);
    await deliver(
      slackMessageEvent({
        user: 'U_BOB',
        text: 'through two failures',
        ts: thread.ts,
        channel: thread.channel,
        mention: true,
      }),
    );
    const messages = await finalText(thread.channel, thread.ts);
    expect(messages).toHaveLength(1);
    expect(messages[0]?.text).toContain('through two failures');
    const posts = [
      ...slack.server.callsTo('POST /api/chat.startStream'),
      ...slack.server.callsTo('POST /api/chat.postMessage'),
    ];
    expect(posts.filter((call) => call.body.channel === thread.channel)).toHaveLength(3);
  });

  it("takes the next reply in the thread as the answer to the agent's question", async () => {
    const thread = newThread();
    await deliver(
      slackMessageEvent({
        user: 'U_BOB',
        text: '/tool ask_user {"question": "Which colour?"}',
        ts: thread.ts,
        channel: thread.channel,
        mention: true,
      }),
    );
    const question = await until(
      () =>
        slack
          .thread(thread.channel, thread.ts)
          .find((message) => message.text.includes('Which colour?')),
      (found) => found !== undefined,
      'the question',
    );
    expect(JSON.stringify(question!.blocks)).not.toContain('"p.a"');
    const replyTs = `${thread.ts.split('.')[0]}.8${thread.ts.split('.')[1]?.slice(1)}`;
    await deliver(
      slackMessageEvent({
        user: 'U_ALICE',
        text: 'green',
        ts: replyTs,
        threadTs: thread.ts,
        channel: thread.channel,
      }),
    );
    await until(
      () => slack.thread(thread.channel, thread.ts),
      (messages) =>
        messages.some((message) => /Tool ask_user returned: .*green/.test(message.text)),
      'the answer used by the agent',
    );
    const request = await server.db.query<{ state: string; response: unknown; actor: unknown }>(
      `select r.state, r.response, r.actor from input_requests r
         join adapter_threads a on a.session_id = r.session_id where a.thread_id = $1`,
      [`slack:${thread.channel}:${thread.ts}`],
    );
    expect(request.rows[0]).toEqual({
      state: 'answered',
      response: { answer: 'green' },
      actor: { user: 'alice', tenant: 'acme' },
    });
    expect(
      slack.thread(thread.channel, thread.ts).find((message) => message.ts === question!.ts)?.text,
    ).toContain('Answered by alice');
  });

  it('answers a direct message (no thread to stream into) by a post and its edits', async () => {
    const n = nextTs++;
    const ts = `1712345678.${String(n).padStart(6, '0')}`;
    await deliver(
      slackMessageEvent({ user: 'U_BOB', text: 'hello in private', ts, channel: `D${n}` }),
    );
    const messages = await until(
      () => [...slack.messages.values()].filter((message) => message.channel === `D${n}`),
      (found) => found.some((message) => /You said: hello in private/.test(message.text)),
      'the reply in the direct message',
    );
    expect(messages).toHaveLength(1);
    expect(messages[0]!.streaming).toBe(false);
    expect(
      slack.server
        .callsTo('POST /api/chat.startStream')
        .filter((call) => call.body.channel === `D${n}`),
    ).toEqual([]);
  });
});
