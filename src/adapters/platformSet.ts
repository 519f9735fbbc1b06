import type { AgentLookup } from '../agents/lookup.js';
import type { DiscordAdapter } from '@chat-adapter/discord';
import { Chat, type StateAdapter } from 'chat';
import { configuredPlatforms, type PlatformName } from '../config/platformTypes.js';
import type { Config } from '../config/types.js';
import type { Logger } from '../log.js';
import type { Db } from '../store/db.js';
import { inboundFailures, registerInbound } from './inbound.js';
import { chatLogger } from './logger.js';
import { platformClient } from './platforms/index.js';
import type { Env, PlatformClient } from './platforms/types.js';
import { ParleyChatState } from './state.js';
import type { Headers } from './verify/secrets.js';

export interface InboundRequest {
  headers: Headers;
  raw: Buffer;
  /** The URL the request was made to (some platforms read it). */
  url: string;
}

export type InboundOutcome =
  | { kind: 'unknown' }
  | { kind: 'unverified' }
  | { kind: 'failed'; error: unknown }
  | { kind: 'answered'; status: number; contentType: string | null; body: Buffer };

/**
 * The configured chat platforms of one process: their clients, one Chat SDK instance
 * (state on Parley's database, every message handled: the `concurrent` strategy, since
 * Parley's admission folds bursts itself and the SDK's default would drop a message
 * that arrives while another is handled).
 */
export class PlatformSet {
  readonly clients: ReadonlyMap<string, PlatformClient>;
  readonly state: StateAdapter;
  private readonly chat: Chat;

  constructor(db: Db, config: Config, env: Env, log: Logger, agents?: AgentLookup) {
    const clients = new Map<string, PlatformClient>();
    for (const platform of configuredPlatforms(config.adapters)) {
      clients.set(platform.platform, platformClient(platform, env, log));
    }
    this.clients = clients;
    this.chat = new Chat({
      userName: 'parley',
      adapters: Object.fromEntries([...clients].map(([name, client]) => [name, client.adapter])),
      state: (this.state = new ParleyChatState(db, log)),
      concurrency: 'concurrent',
      logger: chatLogger(log),
    });
    registerInbound(this.chat, { db, config, clients, log, ...(agents ? { agents } : {}) });
  }

  get size(): number {
    return this.clients.size;
  }

  /** Connects the SDK's state and initialises the adapters (once; retried after a failure). */
  initialize(): Promise<void> {
    return this.chat.initialize();
  }

  /**
   * One inbound request: the platform's signature or token checked on the raw bytes,
   * then the SDK parses it and runs the handlers, which are awaited: the platform gets
   * its answer once the message is durable, and a failure to store it is a 500 that the
   * platform retries.
   */
  async handle(name: PlatformName, request: InboundRequest): Promise<InboundOutcome> {
    const client = this.clients.get(name);
    if (!client) return { kind: 'unknown' };
    if (!(await client.verify(request.headers, request.raw))) return { kind: 'unverified' };
    // A JSON event that is not an object (`null`, a number) is the sender's mistake, not a
    // failure to store it: refused, never retried into the platform's SDK.
    if (isJson(request.headers['content-type']) && !isJsonObject(request.raw)) {
      return { kind: 'answered', status: 400, contentType: null, body: Buffer.alloc(0) };
    }
    const failures: unknown[] = [];
    const tasks: Promise<unknown>[] = [];
    const headers = new globalThis.Headers();
    for (const [key, value] of Object.entries(request.headers)) {
      if (typeof value === 'string') headers.set(key, value);
      else if (Array.isArray(value)) for (const item of value) headers.append(key, item);
    }
    const webRequest = new Request(request.url, {
      method: 'POST',
      headers,
      body: new Uint8Array(request.raw),
    });
    try {
      const response = await inboundFailures.run(failures, async () => {
        // The SDK's own steps before a handler (its state: is the thread followed?) fail
        // outside it; without `propagateHandlerErrors` it logs them, and the platform
        // would get a 200 for a message never stored.
        const answered = await this.chat.webhooks[name]?.(webRequest, {
          waitUntil: (task) => tasks.push(task),
          propagateHandlerErrors: true,
        });
        for (const settled of await Promise.allSettled(tasks)) {
          if (settled.status === 'rejected') failures.push(settled.reason);
        }
        return answered;
      });
      if (failures.length > 0) return { kind: 'failed', error: failures[0] };
      if (!response) return { kind: 'unknown' };
      return {
        kind: 'answered',
        status: response.status,
        contentType: response.headers.get('content-type'),
        body: Buffer.from(await response.arrayBuffer()),
      };
    } catch (error) {
      return { kind: 'failed', error };
    }
  }

  /**
   * One Discord Gateway session (the SDK's listener), forwarding every event to
   * `webhookUrl` with the bot token, until `signal` aborts or `durationMs` passes.
   */
  async runDiscordGateway(webhookUrl: string, signal: AbortSignal, durationMs: number) {
    const adapter = this.clients.get('discord')?.adapter as DiscordAdapter | undefined;
    if (!adapter) return;
    await this.initialize();
    let session: Promise<unknown> = Promise.resolve();
    await adapter.startGatewayListener(
      {
        waitUntil: (task) => {
          session = task;
        },
      },
      durationMs,
      signal,
      webhookUrl,
    );
    await session;
  }

  async close(): Promise<void> {
    await this.chat.shutdown().catch(() => {});
  }
}

function isJson(contentType: string | string[] | undefined): boolean {
  return typeof contentType === 'string' && /^application\/json\b/i.test(contentType.trim());
}

function isJsonObject(raw: Buffer): boolean {
  try {
    const parsed: unknown = JSON.parse(raw.toString('utf8'));
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed);
  } catch {
    return false;
  }
}
