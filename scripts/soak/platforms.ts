import { FakeTelegram, telegramMessageUpdate } from '../../test/support/platforms/telegram.js';
import { sleep } from './http.js';
import type { Random } from './random.js';

/** One update the fake Telegram sent Parley's webhook, and what it was answered. */
export interface PlatformUpdate {
  chatId: string;
  updateId: number;
  text: string;
  /** Answered 200: Telegram would not send it again. */
  acknowledged: boolean;
}

/**
 * Telegram under the chaos (docs/adapters.md), on the tests' fake Bot API
 * (test/support/platforms/telegram.ts): each chat is a person who writes a message, waits
 * for the reply to be posted (and edited to its end), then writes the next. An update is
 * sent to the API processes in turn until one answers 200, as Telegram retries a webhook,
 * with the same update and message ids; 8 % are sent again after their 200.
 */
export class TelegramTraffic {
  readonly updates: PlatformUpdate[] = [];
  readonly token = '123456:soak-telegram-token';
  readonly secret = 'soak-telegram-secret';
  counters = { retries: 0, doubleSends: 0, replyTimeouts: 0 };

  private constructor(readonly telegram: FakeTelegram) {}

  static async start(): Promise<TelegramTraffic> {
    const traffic = new TelegramTraffic(await FakeTelegram.start('123456:soak-telegram-token'));
    return traffic;
  }

  /** The adapter's configuration; its variables are `env()`. */
  config(): Record<string, unknown> {
    return {
      telegram: {
        tenant: 'default',
        bot_token_env: 'SOAK_TG_BOT_TOKEN',
        secret_token_env: 'SOAK_TG_SECRET',
        api_url: this.telegram.server.url,
        users: { '42': { user: 'tina', roles: ['member'] } },
        edit_interval_ms: 200,
        retry_base_ms: 100,
        max_attempts: 50,
      },
    };
  }

  env(): Record<string, string> {
    return { SOAK_TG_BOT_TOKEN: this.token, SOAK_TG_SECRET: this.secret };
  }

  /** `chats` people, each writing `messages` messages, spread over `windowMs`. */
  async run(
    urls: string[],
    random: Random,
    chats: number,
    messages: number,
    windowMs: number,
  ): Promise<void> {
    let updateId = 1;
    let api = 0;
    const person = async (chat: number) => {
      const rng = random.fork(`chat-${chat}`);
      const chatId = 7000 + chat;
      for (let index = 1; index <= messages; index++) {
        await sleep(rng.between(0, windowMs / messages));
        const text = `tg chat ${chatId} message ${index} alpha beta`;
        const update: PlatformUpdate = {
          chatId: String(chatId),
          updateId: updateId++,
          text,
          acknowledged: false,
        };
        this.updates.push(update);
        const body = telegramMessageUpdate({
          updateId: update.updateId,
          chatId,
          messageId: update.updateId,
          userId: 42,
          text,
        });
        const deadline = Date.now() + 60_000;
        for (let attempt = 0; !update.acknowledged && Date.now() < deadline; attempt++) {
          if (attempt > 0) {
            this.counters.retries += 1;
            await sleep(rng.between(100, 1_000));
          }
          update.acknowledged =
            (await this.send(urls[api++ % urls.length] as string, body)) === 200;
        }
        if (update.acknowledged && rng.chance(0.08)) {
          this.counters.doubleSends += 1;
          await this.send(urls[api++ % urls.length] as string, body);
        }
        const replied = await waitFor(() => this.repliesTo(update).length > 0, Date.now() + 60_000);
        if (!replied) this.counters.replyTimeouts += 1;
      }
    };
    await Promise.all(Array.from({ length: chats }, (_, chat) => person(chat)));
  }

  /** The posts in the update's chat whose text is (or was edited into) its echo. */
  repliesTo(update: PlatformUpdate): { posted_at: number }[] {
    const reply = `You said: ${update.text}`;
    return (
      this.telegram
        .inChat(update.chatId)
        // An edit may carry no text (a keyboard only): such an entry is no reply.
        .filter((message) =>
          message.history.some((text) => typeof text === 'string' && text.includes(reply)),
        )
    );
  }

  /** The chat's posts, for a finding (platformChat). */
  describeChat(update: PlatformUpdate): string {
    return describePosts(this.telegram.inChat(update.chatId));
  }

  private async send(base: string, body: string): Promise<number> {
    try {
      const response = await fetch(`${base}/adapters/telegram/webhook`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-telegram-bot-api-secret-token': this.secret,
        },
        body,
        signal: AbortSignal.timeout(10_000),
      });
      await response.body?.cancel();
      return response.status;
    } catch {
      return 0;
    }
  }

  close(): Promise<void> {
    return this.telegram.close();
  }
}

async function waitFor(probe: () => boolean, deadline: number): Promise<boolean> {
  while (Date.now() < deadline) {
    if (probe()) return true;
    await sleep(200);
  }
  return probe();
}

/**
 * A chat's posts in a line: how many, and the last text each showed (cut short), oldest
 * first; what a "no reply posted" finding needs to tell a lost reply from a misfiled one.
 */
export function describePosts(posts: { history: (string | undefined)[] }[]): string {
  const last = posts.map((post) => {
    const text = [...post.history].reverse().find((entry) => typeof entry === 'string') ?? '';
    return JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text);
  });
  return `${posts.length} post(s)${last.length > 0 ? `: ${last.slice(-6).join(', ')}` : ''}`;
}
