import { PushReceiver, pushConfig } from './a2aPush.js';
import type { PlatformTraffic } from './checker/postedOnce.js';
import {
  EffectLedger,
  effectToolsConfig,
  startEffectServer,
  type EffectServer,
} from './effects.js';
import type { SoakOptions } from './options.js';
import { writeParleyConfig } from './parleyConfig.js';
import { TelegramTraffic } from './platforms.js';
import { Random } from './random.js';
import { SlackTraffic } from './slack.js';
import { WebhookReceiver, webhookConfig, webhookEvents } from './webhooks.js';

/**
 * What the soak's Parley talks to, in the soak's own process so that it outlives every
 * kill, whichever the engine: the effect tools' MCP server and their ledger, the outbound
 * webhooks' receiver, the A2A push notifications' receiver, and the fake Telegram and Slack (left out with
 * `--without-platforms`: neither configured nor driven nor checked).
 */
export class Outside {
  private constructor(
    readonly effects: EffectLedger,
    readonly effectServer: EffectServer,
    readonly receiver: WebhookReceiver,
    readonly pushes: PushReceiver,
    readonly telegram: TelegramTraffic | null,
    readonly slack: SlackTraffic | null,
  ) {}

  static async start(options: SoakOptions): Promise<Outside> {
    const receiver = await new WebhookReceiver(new Random(options.seed).fork('webhooks')).start();
    const pushes = await new PushReceiver(new Random(options.seed).fork('a2a-push')).start();
    const telegram = options.withoutPlatforms ? null : await TelegramTraffic.start();
    const slack = options.withoutPlatforms ? null : await SlackTraffic.start();
    const effects = new EffectLedger();
    const effectServer = await startEffectServer(effects);
    return new Outside(effects, effectServer, receiver, pushes, telegram, slack);
  }

  /** Writes the configuration every Parley process of the run reads; returns its path. */
  writeConfig(directory: string, engine: SoakOptions['engine']): string {
    return writeParleyConfig(directory, engine, effectToolsConfig(this.effectServer.url), {
      webhooks: webhookConfig(this.receiver.url, 'SOAK_WEBHOOK_SECRET'),
      a2a: pushConfig(this.pushes.url),
      ...(this.telegram || this.slack
        ? { adapters: { ...this.telegram?.config(), ...this.slack?.config() } }
        : {}),
    });
  }

  /** The variables the configuration names (secrets, tokens). */
  env(): Record<string, string> {
    return {
      ...this.telegram?.env(),
      ...this.slack?.env(),
      SOAK_WEBHOOK_SECRET: this.receiver.secret,
    };
  }

  /** The webhook endpoint and what its receiver got, for the checker. */
  webhookEvidence() {
    return {
      webhook: 'soak',
      events: webhookEvents,
      receipts: this.receiver.receipts,
      invalid: this.receiver.invalid,
    };
  }

  /** What the A2A push receiver got, for the checker. */
  pushEvidence() {
    return { receipts: this.pushes.receipts, invalid: this.pushes.invalid };
  }

  /** Each platform's updates and posts, for the checker, with its posts' idempotency key. */
  platformEvidence(): PlatformTraffic[] {
    const evidence: PlatformTraffic[] = [];
    const telegram = this.telegram;
    const slack = this.slack;
    if (telegram) {
      evidence.push({
        platform: 'telegram',
        updates: telegram.updates,
        repliesTo: (update) => telegram.repliesTo(update),
        describeChat: (update) => telegram.describeChat(update),
        idempotencyKey: null,
      });
    }
    if (slack) {
      evidence.push({
        platform: 'slack',
        updates: slack.updates,
        repliesTo: (update) => slack.repliesTo(update),
        describeChat: (update) => slack.describeChat(update),
        idempotencyKey: 'metadata (parley_reply, read back before a repeat)',
      });
    }
    return evidence;
  }

  async close(): Promise<void> {
    await this.effectServer.close();
    await this.receiver.close();
    await this.pushes.close();
    await this.telegram?.close();
    await this.slack?.close();
  }
}
