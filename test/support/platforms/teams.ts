import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { FakePlatform } from './server.js';

export interface TeamsActivity {
  id: string;
  conversation: string;
  type: string;
  text: string;
  attachments: any[] | undefined;
  history: string[];
}

/**
 * Bot Framework as Parley uses it: an OpenID configuration and its keys (the tokens the
 * connector sends), the token endpoint for the bot's own calls, and the connector's
 * conversation activities (send, update).
 */
export class FakeTeams {
  readonly activities = new Map<string, TeamsActivity>();
  readonly tokenRequests: Record<string, string>[] = [];
  private next = 1;

  private constructor(
    readonly server: FakePlatform,
    private readonly signingKey: CryptoKey,
    private readonly jwk: Record<string, unknown>,
  ) {
    server
      .on('GET /openid', () => ({
        json: { issuer: 'https://api.botframework.com', jwks_uri: `${server.url}/keys` },
      }))
      .on('GET /keys', () => ({ json: { keys: [this.jwk] } }))
      .on('POST /token', (call) => {
        this.tokenRequests.push(call.body);
        // Entra's access tokens are JWTs, and the Teams SDK reads their expiry.
        const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
        const claims = {
          aud: 'https://api.botframework.com',
          exp: Math.floor(Date.now() / 1000) + 3600,
        };
        const accessToken = `${part({ alg: 'RS256', typ: 'JWT' })}.${part(claims)}.c2lnbmF0dXJl`;
        return { json: { access_token: accessToken, expires_in: 3600, token_type: 'Bearer' } };
      })
      .on('POST /v3/conversations/*', (call) => {
        const conversation = decodeURIComponent(call.path.split('/')[3] as string);
        const activity: TeamsActivity = {
          id: `act${this.next++}`,
          conversation,
          type: call.body.type,
          text: call.body.text ?? '',
          attachments: call.body.attachments,
          history: [call.body.text ?? ''],
        };
        this.activities.set(activity.id, activity);
        return { json: { id: activity.id } };
      })
      .on('PUT /v3/conversations/*', (call) => {
        const activity = this.activities.get(decodeURIComponent(call.path.split('/')[5] as string));
        if (!activity) return { status: 404, json: { error: { code: 'NotFound' } } };
        activity.text = call.body.text ?? '';
        activity.attachments = call.body.attachments;
        activity.history.push(activity.text);
        return { json: { id: activity.id } };
      })
      .on('GET /v3/conversations/*', () => ({
        json: { id: '29:user', name: 'Tom', aadObjectId: 'aad-1' },
      }));
  }

  static async start(): Promise<FakeTeams> {
    const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
    const jwk = { ...(await exportJWK(publicKey)), kid: 'bf-key', alg: 'RS256', use: 'sig' };
    return new FakeTeams(await FakePlatform.start(), privateKey, jwk);
  }

  /** The connector's bearer token for an activity from `serviceUrl`. */
  token(input: { appId: string; serviceUrl: string; issuer?: string }): Promise<string> {
    return new SignJWT({ serviceurl: input.serviceUrl })
      .setProtectedHeader({ alg: 'RS256', kid: 'bf-key' })
      .setIssuer(input.issuer ?? 'https://api.botframework.com')
      .setAudience(input.appId)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(this.signingKey);
  }

  messagesIn(conversation: string): TeamsActivity[] {
    return [...this.activities.values()].filter(
      (activity) => activity.conversation === conversation && activity.type === 'message',
    );
  }

  close(): Promise<void> {
    return this.server.close();
  }
}

/** A personal (1:1) message activity. */
export function teamsMessageActivity(input: {
  id: string;
  conversation: string;
  user: string;
  text: string;
  serviceUrl: string;
  appId: string;
}): string {
  return JSON.stringify({
    type: 'message',
    id: input.id,
    timestamp: new Date().toISOString(),
    serviceUrl: input.serviceUrl,
    channelId: 'msteams',
    from: { id: input.user, name: input.user, aadObjectId: `aad-${input.user}` },
    conversation: { id: input.conversation, conversationType: 'personal', tenantId: 'tenant-1' },
    recipient: { id: `28:${input.appId}`, name: 'parley' },
    text: input.text,
    textFormat: 'plain',
    channelData: { tenant: { id: 'tenant-1' } },
  });
}
