import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from './support/poll.js';
import { FakeSlack, slackMessageEvent, slackSigned } from './support/platforms/slack.js';
import { startTestServer, type TestServer } from './support/server.js';

const secret = 'slack-signing-secret-made-by-the-test';
let slack: FakeSlack;
let server: TestServer;

beforeAll(async () => {
  slack = await FakeSlack.start();
  // The adapter starts (on the first event, or when the replies' delivery starts) and asks
  // Slack who the bot is: Slack fails that first time.
  slack.server.fail('POST /api/auth.test', 1);
  server = await startTestServer(
    {
      adapters: {
        slack: {
          tenant: 'acme',
          signing_secret_env: 'SLACK_SIGNING_SECRET',
          bot_token_env: 'SLACK_BOT_TOKEN',
          api_url: slack.apiUrl,
          users: { U_BOB: { user: 'bob', roles: ['member'] } },
        },
      },
    },
    { SLACK_SIGNING_SECRET: secret, SLACK_BOT_TOKEN: 'xoxb-test-token' },
  );
});

afterAll(async () => {
  await server?.close();
  await slack?.close();
});

describe("Slack's bot identity", () => {
  it('is asked for again when the adapter could not learn it, so a mention is stripped', async () => {
    const thread = { channel: 'C1', ts: '1712345678.000001' };
    const signed = slackSigned(
      secret,
      slackMessageEvent({
        user: 'U_BOB',
        text: 'hello parley',
        ts: thread.ts,
        channel: thread.channel,
        mention: true,
      }),
      'application/json',
    );
    const response = await fetch(`${server.url}/adapters/slack/events`, {
      method: 'POST',
      headers: signed.headers,
      body: signed.body,
    });
    expect(response.status).toBe(200);
    const stored = await until(
      async () =>
        (
          await server.db.query<{ content: string }>(
            `select content from messages where tenant = 'acme' and role = 'user'`,
          )
        ).rows,
      (rows) => rows.length === 1,
      'the mention stored as a message',
    );
    expect(stored[0]?.content).toBe('hello parley');
    expect(slack.server.callsTo('POST /api/auth.test').length).toBeGreaterThanOrEqual(2);
  });
});
