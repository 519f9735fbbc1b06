import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from './support/poll.js';
import {
  discordButtonPress,
  discordGatewayMessage,
  discordKeys,
  discordSigned,
  FakeDiscord,
} from './support/platforms/discord.js';
import { startTestServer, type TestServer } from './support/server.js';

const applicationId = 'APP1';
const botToken = 'discord-bot-token-made-by-the-test';
const keys = discordKeys();
let discord: FakeDiscord;
let server: TestServer;
let next = 100;

async function post(body: string, headers: Record<string, string>) {
  const response = await fetch(`${server.url}/adapters/discord/interactions`, {
    method: 'POST',
    headers,
    body,
  });
  return { status: response.status, body: await response.text() };
}

/** A message mentioning the bot in a guild channel: Discord's listener forwards it. */
function mention(content: string, user = 'U_BOB') {
  const id = String(next++);
  const channel = `CH${id}`;
  return {
    id,
    channel,
    body: discordGatewayMessage({
      id,
      channel,
      guild: 'G1',
      user,
      content,
      mentionsBot: applicationId,
    }),
  };
}

const forwarded = { 'content-type': 'application/json', 'x-discord-gateway-token': botToken };

beforeAll(async () => {
  discord = await FakeDiscord.start();
  server = await startTestServer(
    {
      agents: {
        default: {
          tools: { calculator: 'approve' },
          trigger_roles: ['member', 'reviewer'],
          approver_roles: ['reviewer'],
        },
      },
      adapters: {
        discord: {
          tenant: 'guild-tenant',
          public_key: keys.publicKeyHex,
          application_id: applicationId,
          bot_token_env: 'DISCORD_BOT_TOKEN',
          api_url: discord.apiUrl,
          users: {
            U_ALICE: { user: 'alice', roles: ['reviewer'] },
            U_BOB: { user: 'bob', roles: ['member'] },
          },
          edit_interval_ms: 20,
          retry_base_ms: 50,
        },
      },
    },
    { DISCORD_BOT_TOKEN: botToken, PARLEY_DEMO_DELAY_MS: '60' },
  );
});

afterAll(async () => {
  await server?.close();
  await discord?.close();
});

describe('Discord through the Chat SDK', () => {
  it('turns a forwarded message into one turn, answered in a thread by a post and its edits', async () => {
    const message = mention('hello from discord, with a few more words to say');
    expect((await post(message.body, forwarded)).status).toBe(200);
    // The mention started a thread (its id is the message's); the reply streams there.
    const replies = await until(
      () => discord.inChannel(message.id),
      (found) =>
        found.some((reply) =>
          /You said: hello from discord, with a few more words to say/.test(reply.content),
        ),
      'the reply in the thread',
    );
    expect(replies).toHaveLength(1);
    expect(replies[0]!.history.length).toBeGreaterThan(1);
    expect(replies[0]!.nonce).toBeDefined();
    expect(discord.typing).toContain(message.id);
    const turns = await server.db.query<{ tenant: string; author: string }>(
      `select t.tenant, m.author from turns t join messages m on m.turn_id = t.turn_id and m.role = 'user'
        where m.content = 'hello from discord, with a few more words to say'`,
      [],
    );
    expect(turns.rows).toEqual([{ tenant: 'guild-tenant', author: 'bob' }]);
  });

  it('answers the same forwarded message twice once', async () => {
    const message = mention('twice forwarded');
    expect((await post(message.body, forwarded)).status).toBe(200);
    await until(
      () => discord.inChannel(message.id),
      (found) => found.some((reply) => /twice forwarded/.test(reply.content)),
      'the reply',
    );
    const thread = { id: message.id, parent_id: message.channel };
    const again = discordGatewayMessage({
      id: message.id,
      channel: message.id,
      guild: 'G1',
      user: 'U_BOB',
      content: 'twice forwarded',
      mentionsBot: applicationId,
      thread,
    });
    expect((await post(again, forwarded)).status).toBe(200);
    const turns = await server.db.query(
      `select 1 from messages where content = 'twice forwarded' and role = 'user'`,
    );
    expect(turns.rowCount).toBe(1);
  });

  it('refuses a bad Ed25519 signature and a wrong gateway token with 401, writing nothing', async () => {
    const before = (await server.db.query('select 1 from sessions')).rowCount;
    const message = mention('forged');
    const wrongToken = await post(message.body, {
      ...forwarded,
      'x-discord-gateway-token': 'nope',
    });
    expect(wrongToken.status).toBe(401);
    expect(JSON.parse(wrongToken.body)).toMatchObject({ error: 'invalid_signature' });
    const other = discordKeys();
    const press = discordButtonPress({
      applicationId,
      user: 'U_ALICE',
      customId: 'p.a:rep_x',
      threadId: 'T1',
      parentId: 'CH1',
      guild: 'G1',
      messageId: '1',
    });
    const badSignature = await post(press, discordSigned(other.privateKey, press));
    expect(badSignature.status).toBe(401);
    const unsigned = await post(press, { 'content-type': 'application/json' });
    expect(unsigned.status).toBe(401);
    expect((await server.db.query('select 1 from sessions')).rowCount).toBe(before);
  });

  it('answers a signed PING with PONG', async () => {
    const ping = JSON.stringify({ type: 1, id: 'ping', application_id: applicationId });
    const answer = await post(ping, discordSigned(keys.privateKey, ping));
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({ type: 1 });
  });

  it('refuses an approval pressed without the role, then runs the tool when an approver presses', async () => {
    const message = mention('/tool calculator {"expression": "6*7"}');
    await post(message.body, forwarded);
    const card = await until(
      () => discord.inChannel(message.id).find((reply) => reply.components.length > 0),
      (found) => found !== undefined,
      'the approval card',
    );
    const buttons = card!.components.flatMap((row: any) => row.components ?? []);
    const approve = buttons.find((button: any) => String(button.custom_id).startsWith('p.a'));
    expect(approve).toBeDefined();
    const press = (user: string) => {
      const body = discordButtonPress({
        applicationId,
        user,
        customId: approve.custom_id,
        threadId: message.id,
        parentId: message.channel,
        guild: 'G1',
        messageId: card!.id,
      });
      return post(body, discordSigned(keys.privateKey, body));
    };
    const refused = await press('U_BOB');
    expect(refused.status).toBe(200);
    await until(
      () => discord.inChannel(message.id),
      (found) =>
        found.some((reply) => reply.content.includes('<@U_BOB>') && /reviewer/.test(reply.content)),
      'the refusal notice',
    );
    expect((await press('U_ALICE')).status).toBe(200);
    await until(
      () => discord.inChannel(message.id),
      (found) => found.some((reply) => /Tool calculator returned: .*42/.test(reply.content)),
      'the tool result',
    );
    const resolved = discord.messages.get(card!.id)!;
    expect(JSON.stringify(resolved.embeds) + resolved.content).toContain('Approved by alice');
    expect(JSON.stringify(resolved.components)).not.toContain('p.a');
  });
});

describe('Discord delivery', () => {
  it('posts once when Discord fails twice and then succeeds', async () => {
    const message = mention('despite two failures');
    discord.server.fail(`POST /api/v10/channels/${message.id}/messages`, 2, 502);
    await post(message.body, forwarded);
    const replies = await until(
      () => discord.inChannel(message.id),
      (found) => found.some((reply) => /You said: despite two failures/.test(reply.content)),
      'the reply after two failures',
    );
    expect(replies).toHaveLength(1);
    expect(discord.server.callsTo(`POST /api/v10/channels/${message.id}/messages`)).toHaveLength(3);
  });

  it('posts once when the first create reached Discord but its answer was lost (nonce)', async () => {
    const message = mention('a lost answer');
    discord.loseNextCreateResponse = true;
    await post(message.body, forwarded);
    const replies = await until(
      () => discord.inChannel(message.id),
      (found) => found.some((reply) => /You said: a lost answer/.test(reply.content)),
      'the reply',
    );
    expect(replies).toHaveLength(1);
    const creates = discord.server
      .callsTo(`POST /api/v10/channels/${message.id}/messages`)
      .map((call) => call.body.nonce);
    expect(creates.length).toBeGreaterThanOrEqual(2);
    expect(new Set(creates).size).toBe(1);
  });
});
