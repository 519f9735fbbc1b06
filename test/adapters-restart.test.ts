import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openPglite } from '../src/store/pglite.js';
import { openPostgres } from '../src/store/postgres.js';
import type { Db } from '../src/store/db.js';
import { checkJournalInvariants } from './support/invariants.js';
import { engine, freshStorage } from './support/db.js';
import { FakeTelegram, telegramMessageUpdate } from './support/platforms/telegram.js';
import { until } from './support/poll.js';
import { copyPgliteTemplate } from './support/template.js';
import { startParley, stopAllProcesses, type StartOptions } from './support/processes.js';
import { request } from './support/server.js';

// A real `parley serve` killed with SIGKILL after a reply was committed to the journal
// and before the platform acknowledged it (the fake holds the post unanswered), and while
// it fetched a user's photo (before that message's admission): after a restart on the same
// storage the reply is posted once, and the platform's redelivery admits the photo message
// once, its photo stored once. One kill and one restart for both.

const botToken = '424242:restart-token-made-by-the-test';
const secretToken = 'restart-secret-made-by-the-test';
let telegram: FakeTelegram;
const cleanup: (() => Promise<void> | void)[] = [];

beforeAll(async () => {
  telegram = await FakeTelegram.start(botToken);
});
afterEach(async () => {
  await stopAllProcesses();
  for (const clean of cleanup.splice(0)) await clean();
});
afterAll(async () => {
  await telegram?.close();
});

type Storage = Pick<StartOptions, 'dataDir' | 'databaseUrl'>;

async function newStorage(): Promise<Storage> {
  if (engine === 'pglite') {
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-adapters-restart-'));
    copyPgliteTemplate(dataDir);
    cleanup.push(() => rmSync(dataDir, { recursive: true, force: true }));
    return { dataDir };
  }
  const fresh = await freshStorage();
  cleanup.push(() => fresh.drop());
  return { databaseUrl: fresh.storage.url as string };
}

/** The storage's database, once no process holds it (a PGlite directory has one owner). */
async function openStorage(storage: Storage): Promise<Db> {
  return storage.dataDir !== undefined
    ? openPglite(storage.dataDir)
    : openPostgres(storage.databaseUrl as string, 2);
}

function telegramOptions(storage: Storage): StartOptions {
  return {
    ...storage,
    env: {
      TG_BOT_TOKEN: botToken,
      TG_SECRET: secretToken,
      PARLEY_DEMO_DELAY_MS: '0',
      PARLEY_LEASE_TTL_MS: '3000',
    },
    config: {
      runtime: { poll_ms: 200, shutdown_grace_ms: 2000 },
      adapters: {
        telegram: {
          tenant: 'default',
          bot_token_env: 'TG_BOT_TOKEN',
          secret_token_env: 'TG_SECRET',
          api_url: telegram.server.url,
          retry_base_ms: 50,
        },
      },
    },
  };
}

function deliver(url: string, update: string): Promise<Response> {
  return fetch(`${url}/adapters/telegram/webhook`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-telegram-bot-api-secret-token': secretToken,
    },
    body: update,
  });
}

describe(`parley serve (${engine}) killed with a reply unposted and a photo half-fetched`, () => {
  it('posts the reply once, and admits the redelivered photo message once, its photo once', async () => {
    const png = Buffer.from(
      'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
      'base64',
    );
    telegram.addFile('crash_photo', png, 'image/png');
    const download = `GET /file/bot${botToken}/photos/crash_photo.bin`;
    const post = `POST /bot${botToken}/sendMessage`;
    // The platform never answers the first process: neither a post nor a file download.
    telegram.server.hold(post);
    telegram.server.hold(download);
    const storage = await newStorage();
    const options = telegramOptions(storage);
    const said = telegramMessageUpdate({
      updateId: 1,
      chatId: 8080,
      messageId: 1,
      userId: 7,
      text: 'survive the crash',
    });
    const shown = telegramMessageUpdate({
      updateId: 77,
      chatId: 9090,
      messageId: 5,
      userId: 8,
      text: 'what is in this photo?',
      photo: { fileId: 'crash_photo', size: png.byteLength },
    });
    const first = await startParley('serve', options);
    expect((await deliver(first.url as string, said)).status).toBe(200);

    // The reply is committed (its `done` is in the journal) and its post is in flight ...
    const sessions = await until(
      () => request(first.url as string, 'GET', '/api/v1/chat/sessions'),
      (listed) => listed.body.items?.length === 1,
      'the session',
    );
    const sessionId = sessions.body.items[0].session_id as string;
    await until(
      () => request(first.url as string, 'GET', `/api/v1/chat/sessions/${sessionId}/messages`),
      (messages) => messages.body.items?.some((item: any) => item.role === 'assistant'),
      'the committed reply',
    );
    await until(
      () => telegram.server.heldCount(post),
      (held) => held > 0,
      'the post in flight',
    );
    // ... and a photo message is being admitted: its image is being fetched (before the
    // admission's transaction). Now the process dies.
    const unanswered = deliver(first.url as string, shown).catch(() => null);
    await until(
      () => telegram.server.heldCount(download),
      (held) => held > 0,
      'the photo download in flight',
    );
    first.kill('SIGKILL');
    await first.exited;
    // The platform got no answer for the photo message: it delivers it again.
    expect(await unanswered).toBeNull();
    telegram.server.release();
    expect(telegram.inChat('8080')).toHaveLength(0);

    const second = await startParley('serve', options);
    expect((await deliver(second.url as string, shown)).status).toBe(200);
    await until(
      () => [telegram.inChat('8080'), telegram.inChat('9090')],
      ([reply, photoReply]) => (reply?.length ?? 0) > 0 && (photoReply?.length ?? 0) > 0,
      'both replies after the restart',
    );
    expect(telegram.inChat('8080')[0]?.text).toContain('You said: survive the crash');
    // A redelivery after the admission is the same turn; given every chance to post twice,
    // neither reply is.
    expect((await deliver(second.url as string, shown)).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(telegram.inChat('8080')).toHaveLength(1);
    expect(telegram.inChat('9090')).toHaveLength(1);
    second.kill('SIGTERM');
    await second.exited;

    const db = await openStorage(storage);
    try {
      const count = async (sql: string) =>
        (await db.query<{ n: number }>(`select count(*)::int as n from ${sql}`)).rows[0]?.n;
      expect(await count(`turns where tenant = 'default'`)).toBe(2);
      expect(await count(`attachments where tenant = 'default'`)).toBe(1);
      expect(await count(`photos where tenant = 'default'`)).toBe(1);
      const carried = await db.query<{ attachments: string[] }>(
        `select attachments from turns where tenant = 'default' and attachments is not null`,
      );
      expect(carried.rows.map((row) => row.attachments.length)).toEqual([1]);
      await checkJournalInvariants(db);
    } finally {
      await db.close();
    }
  });
});
