import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { FakePlatform } from './server.js';

export interface DiscordMessage {
  id: string;
  channel_id: string;
  content: string;
  components: any[];
  embeds: any[];
  nonce: string | undefined;
  history: string[];
}

/**
 * Discord's REST API as Parley uses it: messages (create, honouring `nonce` with
 * `enforce_nonce` as Discord does, and edit), threads started from a message, typing.
 */
export class FakeDiscord {
  readonly messages = new Map<string, DiscordMessage>();
  readonly typing: string[] = [];
  /** The next message create is made but answered 500: a response lost on the way back. */
  loseNextCreateResponse = false;
  /** Threads by id: their parent channel. */
  readonly threads = new Map<string, string>();
  private next = 5000;

  constructor(readonly server: FakePlatform) {
    server
      .on('POST /api/v10/channels/*', (call) => {
        const parts = call.path.split('/');
        const channel = parts[4] as string;
        if (parts[5] === 'typing') {
          this.typing.push(channel);
          return { status: 204 };
        }
        if (parts[5] === 'messages' && parts[7] === 'threads') {
          // A thread started from a message has the message's id.
          this.threads.set(parts[6] as string, channel);
          return { json: { id: parts[6], name: call.body.name, parent_id: channel, type: 11 } };
        }
        const body = call.body;
        if (body.enforce_nonce && body.nonce !== undefined) {
          const same = [...this.messages.values()].find(
            (message) => message.channel_id === channel && message.nonce === body.nonce,
          );
          if (same) return { json: this.wire(same) };
        }
        const message: DiscordMessage = {
          id: String(this.next++),
          channel_id: channel,
          content: body.content ?? '',
          components: body.components ?? [],
          embeds: body.embeds ?? [],
          nonce: body.nonce,
          history: [body.content ?? ''],
        };
        this.messages.set(message.id, message);
        if (this.loseNextCreateResponse) {
          this.loseNextCreateResponse = false;
          return { status: 500, json: { message: 'Internal Server Error', code: 0 } };
        }
        return { json: this.wire(message) };
      })
      .on('PATCH /api/v10/channels/*', (call) => {
        const message = this.messages.get(call.path.split('/')[6] as string);
        if (!message) return { status: 404, json: { message: 'Unknown Message', code: 10008 } };
        if (call.body.content !== undefined) message.content = call.body.content ?? '';
        if (call.body.components !== undefined) message.components = call.body.components;
        if (call.body.embeds !== undefined) message.embeds = call.body.embeds;
        message.history.push(message.content);
        return { json: this.wire(message) };
      })
      .on('GET /api/v10/channels/*', (call) => {
        const id = call.path.split('/')[4] as string;
        const parent = this.threads.get(id);
        return { json: parent ? { id, type: 11, parent_id: parent } : { id, type: 0 } };
      });
  }

  static async start(): Promise<FakeDiscord> {
    return new FakeDiscord(await FakePlatform.start());
  }

  get apiUrl(): string {
    return `${this.server.url}/api/v10`;
  }

  inChannel(channel: string): DiscordMessage[] {
    return [...this.messages.values()].filter((message) => message.channel_id === channel);
  }

  close(): Promise<void> {
    return this.server.close();
  }

  private wire(message: DiscordMessage) {
    return { id: message.id, channel_id: message.channel_id, content: message.content };
  }
}

/** The application's Ed25519 key pair, made by the test. */
export function discordKeys(): { publicKeyHex: string; privateKey: KeyObject } {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const der = publicKey.export({ format: 'der', type: 'spki' });
  return { publicKeyHex: der.subarray(der.length - 32).toString('hex'), privateKey };
}

/** An interaction body signed as Discord signs it. */
export function discordSigned(privateKey: KeyObject, body: string) {
  const timestamp = String(Math.floor(Date.now() / 1000));
  const signature = sign(null, Buffer.from(timestamp + body), privateKey).toString('hex');
  return {
    'content-type': 'application/json',
    'x-signature-ed25519': signature,
    'x-signature-timestamp': timestamp,
  };
}

/** A Gateway MESSAGE_CREATE as the SDK's listener forwards it. */
export function discordGatewayMessage(input: {
  id: string;
  channel: string;
  guild: string;
  user: string;
  content: string;
  mentionsBot?: string;
  thread?: { id: string; parent_id: string };
}): string {
  return JSON.stringify({
    type: 'GATEWAY_MESSAGE_CREATE',
    timestamp: Date.now(),
    data: {
      id: input.id,
      channel_id: input.channel,
      guild_id: input.guild,
      channel_type: input.thread ? 11 : 0,
      author: { id: input.user, username: input.user, global_name: input.user },
      content: input.content,
      mentions: input.mentionsBot ? [{ id: input.mentionsBot, username: 'parley' }] : [],
      mention_roles: [],
      attachments: [],
      timestamp: new Date().toISOString(),
      ...(input.thread ? { thread: input.thread } : {}),
    },
  });
}

/** A button press (MESSAGE_COMPONENT interaction) in a thread. */
export function discordButtonPress(input: {
  applicationId: string;
  user: string;
  customId: string;
  threadId: string;
  parentId: string;
  guild: string;
  messageId: string;
}): string {
  return JSON.stringify({
    type: 3,
    id: `int${Date.now()}`,
    application_id: input.applicationId,
    token: 'interaction-token',
    version: 1,
    guild_id: input.guild,
    channel_id: input.threadId,
    channel: { id: input.threadId, type: 11, parent_id: input.parentId },
    member: { user: { id: input.user, username: input.user } },
    data: { custom_id: input.customId, component_type: 2 },
    message: { id: input.messageId, channel_id: input.threadId },
  });
}
