import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkDatabase, type Category } from '../scripts/soak/checker/index.js';
import type { PlatformEvidence } from '../scripts/soak/checker/platforms.js';
import { Ledger } from '../scripts/soak/ledger.js';
import { TelegramTraffic, type PlatformUpdate } from '../scripts/soak/platforms.js';
import { Random } from '../scripts/soak/random.js';
import { startTestServer, type TestServer } from './support/server.js';

// The soak checker's platform rules (scripts/soak/checker/platforms.ts) on what a real
// server did with the soak's Telegram traffic (test/support/platforms/telegram.ts, the
// tests' fake Bot API): the checker finds nothing; a message missing from the transcript
// or stored twice is named; a reply posted twice is counted with its window, not hidden.

let server: TestServer;
let traffic: TelegramTraffic;

beforeAll(async () => {
  traffic = await TelegramTraffic.start();
  server = await startTestServer(
    { agents: { default: { model: 'demo/echo' } }, adapters: traffic.config() },
    { ...traffic.env(), PARLEY_DEMO_DELAY_MS: '20' },
  );
  await traffic.run([server.url], new Random(5), 2, 2, 500);
}, 120_000);

afterAll(async () => {
  await server?.close();
  await traffic?.close();
});

function evidence(updates: PlatformUpdate[] = traffic.updates): PlatformEvidence {
  return { platform: 'telegram', updates, repliesTo: (update) => traffic.repliesTo(update) };
}

async function check(from: PlatformEvidence = evidence()) {
  return checkDatabase(server.db, new Ledger(), { platform: from });
}

async function expectFound(category: Category, rule: string, from?: PlatformEvidence) {
  const found = (await check(from)).findings.violations;
  expect(
    found.some((violation) => violation.category === category && violation.check === rule),
    `expected ${category}/${rule} among ${JSON.stringify(found)}`,
  ).toBe(true);
}

describe('the soak checker on Telegram traffic a server answered', () => {
  it('finds nothing: every message admitted once, every reply posted once', async () => {
    const result = await check();
    expect(result.findings.violations).toEqual([]);
    expect(result.platform).toMatchObject({ updates: 4, acknowledged: 4, duplicates: 0 });
  });

  it('an acknowledged message with no transcript row and no reply is lost', async () => {
    const ghost: PlatformUpdate = {
      chatId: '7000',
      updateId: 999,
      text: 'tg never arrived',
      acknowledged: true,
    };
    await expectFound(
      'lost',
      'platform message admitted once',
      evidence([...traffic.updates, ghost]),
    );
    await expectFound('lost', 'platform reply posted', evidence([...traffic.updates, ghost]));
  });

  it('a message stored twice is doubled', async () => {
    const [first, second] = traffic.updates as [PlatformUpdate, PlatformUpdate];
    const row = await server.db.query<{ message_id: string }>(
      `select message_id from messages where content = $1 and role = 'user'`,
      [second.text],
    );
    const messageId = row.rows[0]?.message_id;
    await server.db.query('update messages set content = $2 where message_id = $1', [
      messageId,
      first.text,
    ]);
    try {
      await expectFound('doubled', 'platform message admitted once');
    } finally {
      await server.db.query('update messages set content = $2 where message_id = $1', [
        messageId,
        second.text,
      ]);
    }
  });

  it('a reply posted twice is counted with its window, not a violation', async () => {
    const [first] = traffic.updates as [PlatformUpdate];
    const [post] = traffic.telegram
      .inChat(first.chatId)
      .filter((message) =>
        message.history.some((text) => text.includes(`You said: ${first.text}`)),
      );
    traffic.telegram.messages.push({
      ...post!,
      message_id: 9999,
      posted_at: post!.posted_at + 500,
    });
    try {
      const result = await check();
      expect(result.findings.violations).toEqual([]);
      expect(result.platform).toMatchObject({ duplicates: 1, longestWindowMs: 500 });
    } finally {
      traffic.telegram.messages.pop();
    }
  });
});
