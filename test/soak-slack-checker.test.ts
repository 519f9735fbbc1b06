import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkDatabase, type Category } from '../scripts/soak/checker/index.js';
import type { PlatformTraffic } from '../scripts/soak/checker/postedOnce.js';
import { Ledger } from '../scripts/soak/ledger.js';
import type { PlatformUpdate } from '../scripts/soak/platforms.js';
import { Random } from '../scripts/soak/random.js';
import { SlackTraffic } from '../scripts/soak/slack.js';
import { startTestServer, type TestServer } from './support/server.js';

// The soak's Slack traffic (scripts/soak/slack.ts) against a real server and the tests'
// fake Slack, and the checker's platform rules on it: signed Events API callbacks, a
// mention that starts and follows a thread then plain messages in it, every message
// admitted once and its reply posted once. Slack's posts carry an idempotency key (their
// metadata, read back before a repeat), so a reply posted twice is a violation here, where
// Telegram's is only counted with its window.

let server: TestServer;
let traffic: SlackTraffic;

beforeAll(async () => {
  // Slack's own three seconds would make a slow first answer on a loaded machine a retry.
  traffic = await SlackTraffic.start(30_000);
  server = await startTestServer(
    { agents: { default: { model: 'demo/echo' } }, adapters: traffic.config() },
    { ...traffic.env(), PARLEY_DEMO_DELAY_MS: '20' },
  );
  await traffic.run([server.url], new Random(5), 2, 2, 500);
}, 240_000);

afterAll(async () => {
  await server?.close();
  await traffic?.close();
});

function evidence(updates: PlatformUpdate[] = traffic.updates): PlatformTraffic {
  return {
    platform: 'slack',
    updates,
    repliesTo: (update) => traffic.repliesTo(update),
    idempotencyKey: 'metadata',
  };
}

async function check(from: PlatformTraffic = evidence()) {
  return checkDatabase(server.db, new Ledger(), { platforms: [from] });
}

async function expectFound(category: Category, rule: string, from?: PlatformTraffic) {
  const found = (await check(from)).findings.violations;
  expect(
    found.some((violation) => violation.category === category && violation.check === rule),
    `expected ${category}/${rule} among ${JSON.stringify(found)}`,
  ).toBe(true);
}

describe('the soak checker on Slack traffic a server answered', () => {
  it('finds nothing: every message admitted once, every reply posted once in its thread', async () => {
    const result = await check();
    expect(result.findings.violations).toEqual([]);
    expect(result.platforms).toEqual([
      expect.objectContaining({
        platform: 'slack',
        idempotencyKey: 'metadata',
        updates: 4,
        acknowledged: 4,
        duplicates: 0,
      }),
    ]);
    // Each person's messages went to one thread: one session per channel, two turns each.
    const sessions = await server.db.query<{ thread_id: string; turns: number }>(
      `select a.thread_id, count(t.turn_id)::int as turns
         from adapter_threads a join turns t on t.session_id = a.session_id
        where a.adapter = 'slack' group by a.thread_id order by a.thread_id`,
    );
    expect(sessions.rows.map((row) => row.turns)).toEqual([2, 2]);
    for (const row of sessions.rows)
      expect(row.thread_id).toMatch(/^slack:CSOAK[01]:1700000000\.\d{6}$/);
  });

  it('an acknowledged message with no transcript row and no reply is lost', async () => {
    const ghost: PlatformUpdate = {
      chatId: 'CSOAK0',
      updateId: 999,
      text: 'slack never arrived',
      acknowledged: true,
    };
    const updates = [...traffic.updates, ghost];
    await expectFound('lost', 'platform message admitted once', evidence(updates));
    await expectFound('lost', 'platform reply posted', evidence(updates));
    // The finding says what the thread holds instead: here the replies to the others.
    const found = (
      await check({ ...evidence(updates), describeChat: (update) => traffic.describeChat(update) })
    ).findings.violations.find((violation) => violation.check === 'platform reply posted');
    expect(found?.detail).toMatch(
      /slack update 999 \(chat CSOAK0\): no reply posted; the chat holds thread 1700000000\.\d{6}: 2 post\(s\): "You said: slack channel CSOAK0 message 1/,
    );
  });

  it('a reply posted twice is doubled, and counted with its window', async () => {
    const [first] = traffic.updates as [PlatformUpdate];
    const [post] = traffic.repliesTo(first) as [{ ts: string; posted_at: number }];
    const copy = { ...traffic.slack.messages.get(post.ts)!, ts: '1800009999.000001' };
    traffic.slack.messages.set(copy.ts, { ...copy, posted_at: post.posted_at + 500 });
    try {
      await expectFound('doubled', 'platform reply posted once');
      const result = await check();
      expect(result.platforms[0]).toMatchObject({ duplicates: 1, longestWindowMs: 500 });
    } finally {
      traffic.slack.messages.delete(copy.ts);
    }
  });

  it('without an idempotency key the same reply posted twice is no violation', async () => {
    const [first] = traffic.updates as [PlatformUpdate];
    const [post] = traffic.repliesTo(first) as [{ ts: string; posted_at: number }];
    const copy = { ...traffic.slack.messages.get(post.ts)!, ts: '1800009999.000002' };
    traffic.slack.messages.set(copy.ts, copy);
    try {
      const result = await check({ ...evidence(), idempotencyKey: null });
      expect(result.findings.violations).toEqual([]);
      expect(result.platforms[0]).toMatchObject({ duplicates: 1 });
    } finally {
      traffic.slack.messages.delete(copy.ts);
    }
  });
});
