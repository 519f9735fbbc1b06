import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from './support/poll.js';
import {
  FakeTelegram,
  telegramCallbackUpdate,
  telegramMessageUpdate,
} from './support/platforms/telegram.js';
import { startTestServer, type TestServer } from './support/server.js';

const botToken = '123456:telegram-token-made-by-the-test';
const secretToken = 'telegram-secret-token-made-by-the-test';
let telegram: FakeTelegram;
let server: TestServer;
let next = 1;

async function send(body: string, token = secretToken) {
  const response = await fetch(`${server.url}/adapters/telegram/webhook`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': token },
    body,
  });
  return { status: response.status, body: await response.text() };
}

function message(
  chatId: number,
  userId: number,
  text: string,
  photo?: { fileId: string; size: number },
) {
  const n = next++;
  return telegramMessageUpdate({ updateId: 1000 + n, chatId, messageId: n, userId, text, photo });
}

beforeAll(async () => {
  telegram = await FakeTelegram.start(botToken);
  server = await startTestServer(
    {
      agents: { default: { trigger_roles: ['member'] } },
      adapters: {
        telegram: {
          tenant: 'tg',
          bot_token_env: 'TG_BOT_TOKEN',
          secret_token_env: 'TG_SECRET',
          api_url: telegram.server.url,
          users: { '42': { user: 'tina', roles: ['member'] } },
          edit_interval_ms: 20,
          retry_base_ms: 50,
        },
      },
    },
    { TG_BOT_TOKEN: botToken, TG_SECRET: secretToken, PARLEY_DEMO_DELAY_MS: '60' },
  );
});

afterAll(async () => {
  await server?.close();
  await telegram?.close();
});

/** A 1×1 PNG. */
const png = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

describe('Telegram through the Chat SDK', () => {
  it("brings a photo into the turn as an attachment, in the sender's library; leaves out what is not one", async () => {
    telegram.addFile('photo_1', png);
    telegram.addFile('not_an_image', Buffer.from('just text, named a photo'));
    const update = message(5101, 42, 'what is in this picture?', {
      fileId: 'photo_1',
      size: png.byteLength,
    });
    expect((await send(update)).status).toBe(200);
    await until(
      () => telegram.inChat('5101'),
      (found) => found.some((reply) => /You said: what is in this picture/.test(reply.text)),
      'the reply',
    );
    // Telegram's retry of the update: the same turn, the photo stored once.
    expect((await send(update)).status).toBe(200);
    const turns = await server.db.query<{ attachments: string[]; session_id: string }>(
      `select t.attachments, t.session_id from turns t
         join messages m on m.session_id = t.session_id and m.sequence = t.admitted_sequence
        where m.content = 'what is in this picture?'`,
    );
    expect(turns.rows).toHaveLength(1);
    const [turn] = turns.rows as [{ attachments: string[]; session_id: string }];
    expect(turn.attachments).toHaveLength(1);
    const stored = await server.db.query<{ media_type: string; bytes: number }>(
      'select media_type, bytes from attachments where session_id = $1',
      [turn.session_id],
    );
    expect(stored.rows).toEqual([{ media_type: 'image/png', bytes: png.byteLength }]);
    const library = await server.db.query<{ owner: string; origin: string; source: any }>(
      `select owner, origin, source from photos where tenant = 'tg'`,
    );
    expect(library.rows).toEqual([
      {
        owner: 'tina',
        origin: 'upload',
        source: { session_id: turn.session_id, attachment_id: turn.attachments[0] },
      },
    ]);

    // Bytes that are no image, and a photo over limits.attachment_bytes (not even fetched):
    // left out, the agent told why, nothing stored.
    for (const [fileId, size, note] of [
      ['not_an_image', 24, 'not a png, jpeg, webp or gif image'],
      ['huge', 50_000_000, 'larger than'],
    ] as const) {
      const other = message(5102, 42, `look ${fileId}`, { fileId, size });
      expect((await send(other)).status).toBe(200);
      const said = await until(
        () =>
          server.db.query<{ content: string; attachments: string[] | null }>(
            `select m.content, t.attachments from messages m
               join turns t on t.session_id = m.session_id and t.admitted_sequence = m.sequence
              where m.content like $1`,
            [`look ${fileId}%`],
          ),
        (found) => found.rowCount === 1,
        'the turn',
      );
      expect(said.rows[0]?.content).toContain(note);
      expect(said.rows[0]?.attachments ?? []).toEqual([]);
    }
    expect(
      telegram.server.callsTo(`POST /bot${botToken}/getFile`).map((call) => call.body.file_id),
    ).not.toContain('huge');
  });

  it('turns a private message into one turn, answered by a post and its edits', async () => {
    const update = message(5001, 42, 'hello telegram bot');
    expect((await send(update)).status).toBe(200);
    const replies = await until(
      () => telegram.inChat('5001'),
      (found) => found.some((reply) => /You said: hello telegram bot/.test(reply.text)),
      'the reply',
    );
    expect(replies).toHaveLength(1);
    expect(replies[0]!.history.length).toBeGreaterThan(1);
    expect(telegram.actions).toContainEqual({ chat_id: '5001', action: 'typing' });
    // Telegram's own retry of the update (same update and message ids) is the same turn.
    expect((await send(update)).status).toBe(200);
    const turns = await server.db.query(
      `select 1 from messages where content = 'hello telegram bot' and role = 'user'`,
    );
    expect(turns.rowCount).toBe(1);
  });

  it('refuses a wrong secret token with 401 and writes nothing', async () => {
    const before = (await server.db.query('select 1 from sessions')).rowCount;
    const answer = await send(message(5002, 42, 'forged'), 'wrong-secret');
    expect(answer.status).toBe(401);
    expect(JSON.parse(answer.body)).toMatchObject({ error: 'invalid_signature' });
    const missing = await fetch(`${server.url}/adapters/telegram/webhook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: message(5002, 42, 'forged'),
    });
    expect(missing.status).toBe(401);
    expect((await server.db.query('select 1 from sessions')).rowCount).toBe(before);
  });

  it('refuses a signed event that is not a JSON object with 400, writing nothing', async () => {
    const before = (await server.db.query('select 1 from sessions')).rowCount;
    for (const body of ['null', '42', '[]', '"text"']) {
      const answer = await send(body);
      expect(answer.status, body).toBe(400);
      expect(JSON.parse(answer.body), body).toMatchObject({ error: 'invalid_request' });
    }
    expect((await server.db.query('select 1 from sessions')).rowCount).toBe(before);
  });

  it('stores the message of a user without a trigger role, and answers nobody', async () => {
    expect((await send(message(5003, 77, 'a stranger writes'))).status).toBe(200);
    const stored = await until(
      () =>
        server.db.query<{ state: string; author: string }>(
          `select t.state, m.author from turns t join messages m on m.turn_id = t.turn_id and m.role = 'user'
            where m.content = 'a stranger writes'`,
        ),
      (result) => result.rows.length === 1,
      'the stored post',
    );
    expect(stored.rows[0]).toEqual({ state: 'stored', author: 'telegram:77' });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(telegram.inChat('5003')).toHaveLength(0);
  });

  it('offers options as an inline keyboard; a press chooses one', async () => {
    await send(message(5004, 42, '/options tea|coffee'));
    const offer = await until(
      () =>
        telegram
          .inChat('5004')
          .find((reply) => reply.reply_markup?.inline_keyboard?.flat().length > 0),
      (found) => found !== undefined,
      'the inline keyboard',
    );
    const coffee = offer!.reply_markup.inline_keyboard
      .flat()
      .find((button: any) => button.text === 'coffee');
    expect(Buffer.byteLength(coffee.callback_data)).toBeLessThanOrEqual(64);
    const press = telegramCallbackUpdate({
      updateId: 9000,
      chatId: 5004,
      messageId: offer!.message_id,
      userId: 42,
      data: coffee.callback_data,
    });
    expect((await send(press)).status).toBe(200);
    await until(
      () => telegram.inChat('5004'),
      (found) => found.some((reply) => /Selected option: coffee/.test(reply.text)),
      'the answer to the chosen option',
    );
    expect(
      telegram.inChat('5004').find((reply) => reply.message_id === offer!.message_id)?.text,
    ).toContain('✓ coffee');
  });

  it('answers 500 when the SDK cannot read its state, so Telegram retries; the retry is one turn', async () => {
    // The SDK reads whether the thread is followed before Parley's handler runs: a
    // database that fails it (PostgreSQL restarting, say) must not be answered 200.
    const update = message(5005, 42, 'while the database is away');
    await server.db.query('alter table chat_state_subscriptions rename to chat_state_away');
    let failed: { status: number };
    try {
      failed = await send(update);
    } finally {
      await server.db.query('alter table chat_state_away rename to chat_state_subscriptions');
    }
    expect(failed.status).toBe(500);
    const none = await server.db.query(
      `select 1 from messages where content = 'while the database is away'`,
    );
    expect(none.rowCount).toBe(0);
    expect((await send(update)).status).toBe(200);
    await until(
      () => telegram.inChat('5005'),
      (found) => found.some((reply) => /You said: while the database is away/.test(reply.text)),
      'the reply to the retried update',
    );
    const stored = await server.db.query(
      `select 1 from messages where content = 'while the database is away' and role = 'user'`,
    );
    expect(stored.rowCount).toBe(1);
  });
});
