import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { platformClient } from '../src/adapters/platforms/index.js';
import type { PlatformClient } from '../src/adapters/platforms/types.js';
import { compileConfig } from '../src/config/load.js';
import type { PlatformConfig } from '../src/config/platformTypes.js';
import { createLogger } from '../src/log.js';
import { DeadlineError, withDeadline } from '../src/time/abortable.js';
import { until } from './support/poll.js';
import { discordKeys, FakeDiscord } from './support/platforms/discord.js';
import { FakeGchat } from './support/platforms/gchat.js';
import type { FakePlatform } from './support/platforms/server.js';
import { FakeSlack } from './support/platforms/slack.js';
import { FakeTeams } from './support/platforms/teams.js';
import { FakeTelegram } from './support/platforms/telegram.js';

// Each platform client, against its fake, with the fake holding every call unanswered:
// the call's deadline ends the call and aborts its HTTP request (the fake sees the
// connection closed), on every platform, whatever the SDK does underneath.

const log = createLogger({ level: 'silent' });
const botToken = '424242:deadline-clients-token';
let slack: FakeSlack;
let telegram: FakeTelegram;
let discord: FakeDiscord;
let gchat: FakeGchat;
let teams: FakeTeams;
let clients: Map<string, PlatformClient>;

beforeAll(async () => {
  [slack, telegram, discord, gchat, teams] = await Promise.all([
    FakeSlack.start(),
    FakeTelegram.start(botToken),
    FakeDiscord.start(),
    FakeGchat.start(),
    FakeTeams.start(),
  ]);
  const env = {
    SLACK_SIGNING_SECRET: 'signing',
    SLACK_BOT_TOKEN: 'xoxb-deadline',
    TG_BOT_TOKEN: botToken,
    TG_SECRET: 'secret',
    DISCORD_BOT_TOKEN: 'discord-deadline',
    GCHAT_CREDENTIALS: await gchat.serviceAccount(),
    TEAMS_APP_PASSWORD: 'teams-deadline',
  };
  // The clients' own limit (Slack's `timeout`, the requests made outside a call) far
  // beyond the deadlines the tests give their calls: each call's deadline is its own.
  const platform = { tenant: 'acme', timeout_ms: 8000 };
  const config = compileConfig(
    {
      adapters: {
        slack: {
          ...platform,
          signing_secret_env: 'SLACK_SIGNING_SECRET',
          bot_token_env: 'SLACK_BOT_TOKEN',
          api_url: slack.apiUrl,
        },
        telegram: {
          ...platform,
          bot_token_env: 'TG_BOT_TOKEN',
          secret_token_env: 'TG_SECRET',
          api_url: telegram.server.url,
        },
        discord: {
          ...platform,
          public_key: discordKeys().publicKeyHex,
          application_id: '1234',
          bot_token_env: 'DISCORD_BOT_TOKEN',
          api_url: discord.apiUrl,
        },
        gchat: {
          ...platform,
          credentials_env: 'GCHAT_CREDENTIALS',
          project_number: '1',
          jwks_url: `${gchat.server.url}/jwks`,
          api_url: gchat.server.url,
        },
        teams: {
          ...platform,
          app_id: '00000000-0000-0000-0000-000000000001',
          app_password_env: 'TEAMS_APP_PASSWORD',
          app_tenant_id: 'tenant-1',
          openid_url: `${teams.server.url}/openid`,
          token_url: `${teams.server.url}/token`,
          api_url: teams.server.url,
        },
      },
    },
    env,
  );
  clients = new Map(
    Object.values(config.adapters).map((adapter: PlatformConfig) => [
      adapter.platform,
      platformClient(adapter, env, log),
    ]),
  );
});

afterAll(async () => {
  for (const fake of [slack, telegram, discord, gchat, teams]) {
    fake?.server.release();
    await fake?.close();
  }
});

/** Each platform: its fake, the calls held there, and a thread of the SDK's encoding. */
function platformCase(platform: string): [FakePlatform, string[], () => string] {
  const client = (name: string) => clients.get(name) as PlatformClient;
  const cases: [string, FakePlatform, string[], () => string][] = [
    [
      'slack',
      slack.server,
      ['POST /api/chat.*', 'POST /api/assistant.*'],
      () => client('slack').adapter.encodeThreadId({ channel: 'C1', threadTs: '1712.000100' }),
    ],
    [
      'telegram',
      telegram.server,
      [`POST /bot${botToken}/sendMessage`, `POST /bot${botToken}/sendChatAction`],
      () => client('telegram').adapter.encodeThreadId({ chatId: '5001' }),
    ],
    [
      'discord',
      discord.server,
      ['POST /api/v10/*'],
      () => client('discord').adapter.encodeThreadId({ guildId: 'g1', channelId: 'c1' }),
    ],
    [
      'gchat',
      gchat.server,
      ['POST /v1/*'],
      () => client('gchat').adapter.encodeThreadId({ spaceName: 'spaces/S1', isDM: true }),
    ],
    [
      'teams',
      teams.server,
      ['POST /v3/*'],
      () =>
        client('teams').adapter.encodeThreadId({
          conversationId: 'a:conversation',
          serviceUrl: teams.server.url,
        }),
    ],
  ];
  const found = cases.find(([name]) => name === platform);
  if (!found) throw new Error(`no case for ${platform}`);
  return [found[1], found[2], found[3]];
}

describe('every outbound platform call under a deadline', () => {
  it.each(['slack', 'telegram', 'discord', 'gchat', 'teams'])(
    '%s: a post that gets no answer ends at its deadline and its request is aborted',
    async (name) => {
      const [server, held, threadOf] = platformCase(name);
      // One answered post first: a client that signs in (Google Chat's service account,
      // Teams' bot token) has its token, so the deadline below is the held post's alone.
      const warmed = await clients
        .get(name)!
        .post(
          threadOf(),
          { markdown: 'answered' },
          `rep_warm_${name}`,
          AbortSignal.timeout(30_000),
        );
      expect(warmed).toBeTruthy();
      for (const route of held) server.hold(route);
      try {
        const before = server.abandoned.length;
        const client = clients.get(name) as PlatformClient;
        const outcome = await withDeadline(300, (signal) =>
          client.post(threadOf(), { markdown: 'never answered' }, `rep_deadline_${name}`, signal),
        ).catch((error: unknown) => error);
        expect(outcome).toBeInstanceOf(DeadlineError);
        await until(
          () => server.abandoned.length - before,
          (aborted) => aborted > 0,
          `${name}: the request closed by the client`,
        );
        if (name !== 'gchat') {
          // Typing too (Google Chat has none).
          const typed = server.abandoned.length;
          const typing = await withDeadline(300, (signal) => client.typing(threadOf(), signal))
            .then(() => 'answered')
            .catch((error: unknown) => error);
          expect(typing).toBeInstanceOf(DeadlineError);
          await until(
            () => server.abandoned.length - typed,
            (aborted) => aborted > 0,
            `${name}: the typing request closed by the client`,
          );
        }
      } finally {
        server.release();
      }
    },
  );

  it("bounds Slack's queue: 8 requests in flight, 64 waiting, the rest refused at once", async () => {
    const client = clients.get('slack') as PlatformClient;
    const thread = client.adapter.encodeThreadId({ channel: 'C2', threadTs: '1712.000200' });
    slack.server.hold('POST /api/chat.postMessage');
    try {
      const outcomes = await Promise.all(
        Array.from({ length: 80 }, (_, index) =>
          // Long enough for all 80 to reach the queue before the first deadline. The first
          // 8 (in flight) outlive the 64 waiting: a slot freed while a waiting call still
          // had time left would rightly start it, which is not what this counts.
          withDeadline(index < 8 ? 5000 : 3000, (signal) =>
            client.post(thread, { markdown: `post ${index}` }, `rep_queue_${index}`, signal),
          ).then(
            () => 'posted',
            (error: unknown) =>
              error instanceof DeadlineError ? 'deadline' : (error as Error).message,
          ),
        ),
      );
      expect(outcomes.filter((outcome) => outcome === 'deadline')).toHaveLength(72);
      expect(
        outcomes.filter((outcome) => outcome === 'too many Slack requests waiting'),
      ).toHaveLength(8);
      // The requests that waited past their deadline were never made.
      expect(slack.server.heldCount('POST /api/chat.postMessage')).toBe(8);
    } finally {
      slack.server.release();
    }
  });
});
