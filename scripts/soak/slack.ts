import { FakeSlack, slackMessageEvent, slackSigned } from '../../test/support/platforms/slack.js';
import { sleep } from './http.js';
import { describePosts, type PlatformUpdate } from './platforms.js';
import type { Random } from './random.js';

/** How long Slack waits for an Events API answer before it counts the delivery failed. */
const slackAnswerWithinMs = 3_000;
/**
 * Slack's retries of a delivery that got no 200: at once, after a minute, after five
 * minutes; then it gives up. A restarted Parley answers long before a minute passes; the
 * soak keeps that (its restarts take seconds) with 10 s and 30 s.
 */
const retryDelaysMs = [0, 10_000, 30_000] as const;

/** Slack's `X-Slack-Retry-Reason` values for what the soak's deliveries meet. */
type Failure = 'http_timeout' | 'http_error' | 'connection_failed';

/**
 * Slack under the chaos (docs/adapters.md), on the tests' fake Web API
 * (test/support/platforms/slack.ts): each person has a channel and one thread in it. The
 * first message mentions the bot (which starts the thread and follows it); the next ones
 * are plain messages in the thread. A person waits for the reply to be posted before
 * writing again. Each message is an Events API callback signed with the signing secret,
 * sent to the API processes in turn; one not answered 200 within Slack's three seconds is
 * sent again with `X-Slack-Retry-Num` / `X-Slack-Retry-Reason`, as Slack retries, at most
 * three times (then Slack drops it: the message is counted as given up). 8 % are sent
 * again after their 200, as Slack does when its timer fired just as the answer came.
 */
export class SlackTraffic {
  readonly updates: PlatformUpdate[] = [];
  readonly token = 'xoxb-soak-slack-token';
  readonly secret = 'soak-slack-signing-secret';
  counters = { retries: 0, doubleSends: 0, givenUp: 0, replyTimeouts: 0 };
  /** The thread each channel's messages go to: the channel's first message. */
  private readonly roots = new Map<string, string>();

  private constructor(
    readonly slack: FakeSlack,
    private readonly answerWithinMs: number,
  ) {}

  /** `answerWithinMs`: Slack's three seconds, unless a test on a loaded machine needs more. */
  static async start(answerWithinMs = slackAnswerWithinMs): Promise<SlackTraffic> {
    return new SlackTraffic(await FakeSlack.start(), answerWithinMs);
  }

  /** The adapter's configuration; its variables are `env()`. */
  config(): Record<string, unknown> {
    return {
      slack: {
        tenant: 'default',
        signing_secret_env: 'SOAK_SLACK_SIGNING_SECRET',
        bot_token_env: 'SOAK_SLACK_BOT_TOKEN',
        api_url: this.slack.apiUrl,
        users: { U_SOAK: { user: 'sam', roles: ['member'] } },
        edit_interval_ms: 200,
        retry_base_ms: 100,
        max_attempts: 50,
      },
    };
  }

  env(): Record<string, string> {
    return { SOAK_SLACK_SIGNING_SECRET: this.secret, SOAK_SLACK_BOT_TOKEN: this.token };
  }

  /** `people` people, each writing `messages` messages, spread over `windowMs`. */
  async run(
    urls: string[],
    random: Random,
    people: number,
    messages: number,
    windowMs: number,
  ): Promise<void> {
    let sequence = 1;
    let api = 0;
    const next = () => urls[api++ % urls.length] as string;
    const person = async (index: number) => {
      const rng = random.fork(`person-${index}`);
      const channel = `CSOAK${index}`;
      let followed = false;
      for (let message = 1; message <= messages; message++) {
        await sleep(rng.between(0, windowMs / messages));
        const text = `slack channel ${channel} message ${message} alpha beta`;
        const update: PlatformUpdate = {
          chatId: channel,
          updateId: sequence++,
          text,
          acknowledged: false,
        };
        const ts = `1700000000.${String(update.updateId).padStart(6, '0')}`;
        const root = this.roots.get(channel) ?? ts;
        this.roots.set(channel, root);
        this.updates.push(update);
        // Until a mention was answered 200 the thread may not be followed: mention again.
        const body = slackMessageEvent({
          user: 'U_SOAK',
          text,
          ts,
          channel,
          ...(root === ts ? {} : { threadTs: root }),
          mention: !followed,
        });
        let failure: Failure | null = null;
        for (let attempt = 0; !update.acknowledged && attempt <= retryDelaysMs.length; attempt++) {
          if (attempt > 0) {
            this.counters.retries += 1;
            await sleep(retryDelaysMs[attempt - 1] as number);
          }
          failure = await this.send(next(), body, attempt, failure);
          update.acknowledged = failure === null;
        }
        if (!update.acknowledged) {
          this.counters.givenUp += 1;
          continue;
        }
        followed = true;
        if (rng.chance(0.08)) {
          this.counters.doubleSends += 1;
          await this.send(next(), body, 1, 'http_timeout');
        }
        const deadline = Date.now() + 60_000;
        while (this.repliesTo(update).length === 0 && Date.now() < deadline) await sleep(200);
        if (this.repliesTo(update).length === 0) this.counters.replyTimeouts += 1;
      }
    };
    await Promise.all(Array.from({ length: people }, (_, index) => person(index)));
  }

  /** The bot's messages in the update's thread whose text is (or was) its echo. */
  repliesTo(update: PlatformUpdate): { posted_at: number }[] {
    const root = this.roots.get(update.chatId);
    if (root === undefined) return [];
    const reply = `You said: ${update.text}`;
    return this.slack
      .thread(update.chatId, root)
      .filter((message) => message.history.some((text) => text.includes(reply)));
  }

  /** The update's thread, for a finding (the bot's posts and the person's messages). */
  describeChat(update: PlatformUpdate): string {
    const root = this.roots.get(update.chatId);
    return root === undefined
      ? 'no thread'
      : `thread ${root}: ${describePosts(this.slack.thread(update.chatId, root))}`;
  }

  /**
   * One delivery; a retry (`retry` > 0) carries Slack's headers with why the one before
   * failed. Null when answered 200, else why it failed.
   */
  private async send(
    base: string,
    body: string,
    retry: number,
    reason: Failure | null,
  ): Promise<Failure | null> {
    const signed = slackSigned(this.secret, body);
    const headers: Record<string, string> = { ...signed.headers };
    if (retry > 0) {
      headers['x-slack-retry-num'] = String(retry);
      headers['x-slack-retry-reason'] = reason ?? 'http_timeout';
    }
    try {
      const response = await fetch(`${base}/adapters/slack/events`, {
        method: 'POST',
        headers,
        body: signed.body,
        signal: AbortSignal.timeout(this.answerWithinMs),
      });
      await response.body?.cancel();
      return response.status === 200 ? null : 'http_error';
    } catch (error) {
      return (error as Error).name === 'TimeoutError' ? 'http_timeout' : 'connection_failed';
    }
  }

  close(): Promise<void> {
    return this.slack.close();
  }
}
