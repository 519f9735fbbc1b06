import { exportJWK, exportPKCS8, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { FakePlatform } from './server.js';

export interface GchatMessage {
  name: string;
  space: string;
  thread: string | undefined;
  text: string;
  cards: any[] | undefined;
  history: string[];
}

/**
 * Google Chat as Parley uses it: the Chat API's messages (create with a client-assigned
 * id, refused when it exists, as Google does; get; update), the service account token
 * endpoint, and a JWKS whose key signs the requests "Chat" sends.
 */
export class FakeGchat {
  readonly messages = new Map<string, GchatMessage>();
  /** The next create is made but answered 500: a response lost on the way back. */
  loseNextCreateResponse = false;
  private next = 1;

  private constructor(
    readonly server: FakePlatform,
    private readonly signingKey: CryptoKey,
    private readonly jwk: Record<string, unknown>,
  ) {
    server
      .on('GET /jwks', () => ({ json: { keys: [this.jwk] } }))
      .on('POST /token', () => ({
        json: { access_token: 'gchat-access-token', expires_in: 3600, token_type: 'Bearer' },
      }))
      .on('POST /v1/spaces/*', (call) => {
        const space = call.path.split('/').slice(2, 4).join('/');
        const id = call.query.get('messageId') ?? undefined;
        const name = `${space}/messages/${id ?? `m${this.next++}`}`;
        if (this.messages.has(name)) {
          return {
            status: 409,
            json: { error: { code: 409, status: 'ALREADY_EXISTS', message: 'exists' } },
          };
        }
        const message: GchatMessage = {
          name,
          space,
          thread: call.body.thread?.name,
          text: call.body.text ?? '',
          cards: call.body.cardsV2,
          history: [call.body.text ?? ''],
        };
        this.messages.set(name, message);
        if (this.loseNextCreateResponse) {
          this.loseNextCreateResponse = false;
          return { status: 500, json: { error: { code: 500, message: 'backend error' } } };
        }
        return { json: this.wire(message) };
      })
      .on('GET /v1/spaces/*', (call) => {
        const message = this.messages.get(call.path.slice('/v1/'.length));
        return message
          ? { json: this.wire(message) }
          : { status: 404, json: { error: { code: 404 } } };
      })
      .on('PUT /v1/spaces/*', (call) => this.update(call.path, call.body))
      .on('PATCH /v1/spaces/*', (call) => this.update(call.path, call.body));
  }

  static async start(): Promise<FakeGchat> {
    const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
    const jwk = { ...(await exportJWK(publicKey)), kid: 'test-key', alg: 'RS256', use: 'sig' };
    return new FakeGchat(await FakePlatform.start(), privateKey, jwk);
  }

  /** A service account key whose token endpoint is this fake. */
  async serviceAccount(): Promise<string> {
    const { privateKey } = await generateKeyPair('RS256', { extractable: true });
    return JSON.stringify({
      type: 'service_account',
      client_email: 'parley@test.iam.gserviceaccount.com',
      private_key: await exportPKCS8(privateKey),
      token_uri: `${this.server.url}/token`,
    });
  }

  /** The bearer token Google Chat sends, signed by this fake's key. */
  token(claims: { audience: string; issuer?: string; expiresIn?: string }): Promise<string> {
    return new SignJWT({})
      .setProtectedHeader({ alg: 'RS256', kid: 'test-key' })
      .setIssuer(claims.issuer ?? 'chat@system.gserviceaccount.com')
      .setAudience(claims.audience)
      .setIssuedAt()
      .setExpirationTime(claims.expiresIn ?? '5m')
      .sign(this.signingKey);
  }

  inSpace(space: string): GchatMessage[] {
    return [...this.messages.values()].filter((message) => message.space === space);
  }

  close(): Promise<void> {
    return this.server.close();
  }

  private update(path: string, body: any) {
    const message = this.messages.get(path.slice('/v1/'.length));
    if (!message) return { status: 404, json: { error: { code: 404 } } };
    if (body.text !== undefined) message.text = body.text;
    if (body.cardsV2 !== undefined) message.cards = body.cardsV2;
    message.history.push(message.text);
    return { json: this.wire(message) };
  }

  private wire(message: GchatMessage) {
    return {
      name: message.name,
      text: message.text,
      thread: message.thread ? { name: message.thread } : undefined,
      space: { name: message.space },
    };
  }
}

/** A message event in the Workspace add-on format Chat apps receive. */
export function gchatMessageEvent(input: {
  space: string;
  message: string;
  user: string;
  text: string;
  dm?: boolean;
}): string {
  const space = {
    name: input.space,
    type: input.dm ? 'DM' : 'ROOM',
    spaceType: input.dm ? 'DIRECT_MESSAGE' : 'SPACE',
  };
  return JSON.stringify({
    commonEventObject: { hostApp: 'CHAT' },
    chat: {
      user: { name: input.user, displayName: input.user, type: 'HUMAN' },
      eventTime: new Date().toISOString(),
      messagePayload: {
        space,
        message: {
          name: `${input.space}/messages/${input.message}`,
          sender: { name: input.user, displayName: input.user, type: 'HUMAN' },
          text: input.text,
          argumentText: input.text,
          createTime: new Date().toISOString(),
          space,
          thread: { name: `${input.space}/threads/${input.message}` },
        },
      },
    },
  });
}
