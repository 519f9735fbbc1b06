import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientKey, platformTurnId } from '../src/adapters/identity.js';
import { admitTurn } from '../src/store/admitTurn.js';
import { trustedViewer } from '../src/store/visibility.js';
import { until } from './support/poll.js';
import { FakeTelegram, telegramMessageUpdate } from './support/platforms/telegram.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// Platform messages' turn ids live in a namespace no API client can write (they have a dot,
// a client's turn_id cannot); trigger_roles is strict: the wildcard role `*` passes only
// when tenancy.wildcard_triggers says so.
const botToken = '515151:telegram-token-of-the-turn-id-test';
const secretToken = 'telegram-secret-of-the-turn-id-test';
const keys = { K_MALLORY: 'mallory-key-83d1', K_STAR: 'star-key-1f0a' };
const mallory = { authorization: `Bearer ${keys.K_MALLORY}` };
const star = { authorization: `Bearer ${keys.K_STAR}` };
let telegram: FakeTelegram;
let server: TestServer;
let next = 100;

const agents = { default: { trigger_roles: ['member'] } };
const auth = {
  keys: [
    { key_env: 'K_MALLORY', tenant: 'tg', user: 'mallory', roles: ['member'] },
    { key_env: 'K_STAR', tenant: 'tg', user: 'star', roles: ['*'] },
  ],
};

beforeAll(async () => {
  telegram = await FakeTelegram.start(botToken);
  server = await startTestServer(
    {
      auth,
      agents,
      adapters: {
        telegram: {
          tenant: 'tg',
          bot_token_env: 'TG_BOT_TOKEN',
          secret_token_env: 'TG_SECRET',
          api_url: telegram.server.url,
          users: {
            '42': { user: 'tina', roles: ['member'] },
            '43': { user: 'wanda', roles: ['*'] },
          },
          edit_interval_ms: 20,
          retry_base_ms: 50,
        },
      },
    },
    { ...keys, TG_BOT_TOKEN: botToken, TG_SECRET: secretToken },
  );
});
afterAll(async () => {
  await server?.close();
  await telegram?.close();
});

/** A Telegram private message; returns its message id (Telegram's, per chat). */
async function deliver(chatId: number, userId: number, text: string, messageId = next++) {
  const response = await fetch(`${server.url}/adapters/telegram/webhook`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': secretToken },
    body: telegramMessageUpdate({ updateId: messageId, chatId, messageId, userId, text }),
  });
  expect(response.status).toBe(200);
  return messageId;
}

/** The parts Parley names a Telegram message's turn by: adapter, chat, message id. */
const parts = (chatId: number, messageId: number) => [
  'telegram',
  String(chatId),
  `${chatId}:${messageId}`,
];

async function userTurns(text: string) {
  return server.db.query<{ turn_id: string; state: string; session_id: string }>(
    `select t.turn_id, t.state, t.session_id from turns t
       join messages m on m.session_id = t.session_id and m.sequence = t.admitted_sequence
      where m.content = $1 and m.role = 'user'`,
    [text],
  );
}

describe('platform turn ids', () => {
  it('are dotted, so a client cannot take one: a forged id is refused, the real message admitted', async () => {
    const messageId = next++;
    const dotted = platformTurnId(parts(7101, messageId));
    expect(dotted).toContain('.');
    const forged = await request(
      server.url,
      'POST',
      '/api/v1/chat/turns',
      { turn_id: dotted, message: 'squatting on a platform message' },
      mallory,
    );
    expect(forged.status).toBe(400);
    expect(forged.body).toMatchObject({ error: 'invalid_request', field: 'turn_id' });
    expect((await userTurns('squatting on a platform message')).rowCount).toBe(0);
    // What squatting used to be: the message's old, client-shaped id, taken first.
    const legacy = clientKey(parts(7101, messageId));
    const squatted = await request(
      server.url,
      'POST',
      '/api/v1/chat/turns',
      { turn_id: legacy, message: 'the real message' },
      mallory,
    );
    expect(squatted.status).toBe(202);

    await deliver(7101, 42, 'the real message', messageId);
    const admitted = await until(
      () => userTurns('the real message'),
      (found) => found.rowCount === 2,
      'the platform message',
    );
    const platformTurn = admitted.rows.find((row) => row.turn_id === dotted);
    expect(platformTurn).toBeDefined();
    expect(platformTurn?.session_id).not.toBe(squatted.body.session_id);
    await until(
      () => telegram.inChat('7101'),
      (found) => found.some((reply) => /the real message/.test(reply.text)),
      'the answer in Telegram',
    );
    // Telegram's retry of the update is the same turn.
    await deliver(7101, 42, 'the real message', messageId);
    expect((await userTurns('the real message')).rowCount).toBe(2);
  });

  it('drop a redelivered update that was admitted under its old id before the upgrade', async () => {
    const first = await deliver(7102, 42, 'opening the thread');
    await until(
      () => userTurns('opening the thread'),
      (found) => found.rowCount === 1,
      'the first message',
    );
    const sessionId = (await userTurns('opening the thread')).rows[0]!.session_id;
    expect((await userTurns('opening the thread')).rows[0]!.turn_id).toBe(
      platformTurnId(parts(7102, first)),
    );
    // As the previous version admitted a message: its client-shaped id, in the thread's
    // session, by its author.
    const old = next++;
    await admitTurn(server.db, {
      tenant: 'tg',
      author: 'tina',
      viewer: trustedViewer,
      turnId: clientKey(parts(7102, old)),
      sessionId,
      agent: null,
      defaultAgent: 'default',
      greetings: new Map(),
      visibilities: new Map(),
      message: 'sent before the upgrade',
      option: null,
      attachments: [],
      triggers: new Map([['default', true]]),
      pendingInput: new Map(),
    });
    await deliver(7102, 42, 'sent before the upgrade', old);
    // A later message is admitted normally, after the redelivery was handled.
    await deliver(7102, 42, 'sent after the upgrade');
    await until(
      () => userTurns('sent after the upgrade'),
      (found) => found.rowCount === 1,
      'the later message',
    );
    const redelivered = await userTurns('sent before the upgrade');
    expect(redelivered.rows.map((row) => row.turn_id)).toEqual([clientKey(parts(7102, old))]);
  });
});

describe('trigger_roles and the wildcard role', () => {
  it('stores, without answering, the post of a key whose only role is *', async () => {
    const posted = await request(
      server.url,
      'POST',
      '/api/v1/chat/turns',
      { turn_id: 'star_post', message: 'a wildcard post' },
      star,
    );
    expect(posted.status).toBe(202);
    expect(posted.body.state).toBe('stored');
    const member = await request(
      server.url,
      'POST',
      '/api/v1/chat/turns',
      { turn_id: 'member_post', message: 'a member post' },
      mallory,
    );
    expect(member.body.state).toBe('accepted');
  });

  it('stores, without answering, the message of a platform user whose role is *', async () => {
    await deliver(7103, 43, 'a wildcard platform message');
    const stored = await until(
      () => userTurns('a wildcard platform message'),
      (found) => found.rowCount === 1,
      'the stored message',
    );
    expect(stored.rows[0]?.state).toBe('stored');
  });

  it('lets * trigger turns when tenancy.wildcard_triggers is set', async () => {
    const permissive = await startTestServer(
      { auth, agents, tenancy: { wildcard_triggers: true } },
      keys,
    );
    try {
      const posted = await request(
        permissive.url,
        'POST',
        '/api/v1/chat/turns',
        { turn_id: 'star_post', message: 'a wildcard post' },
        star,
      );
      expect(posted.status).toBe(202);
      expect(posted.body.state).toBe('accepted');
    } finally {
      await permissive.close();
    }
  });
});
