import { Gaxios, type GaxiosOptions, type GaxiosResponse } from 'gaxios';
import { importPKCS8, SignJWT } from 'jose';
import { requestSignal } from './call.js';

export interface ServiceAccountKey {
  client_email: string;
  private_key: string;
  token_uri?: string;
}

/**
 * A Google service account's access tokens, for the Chat API client: the OAuth JWT-bearer
 * grant against the key's own `token_uri` (Google's, or a test's), cached until a minute
 * before expiry. It stands in for google-auth-library's client, whose token endpoint is
 * fixed; googleapis calls `request()` with the prepared request, which is where every
 * request of the Chat API client gets its deadline: the current platform call's signal
 * (see `call.ts`), or `fallbackMs` outside one. googleapis' own retries happen inside
 * that deadline.
 */
export class ServiceAccountAuth {
  private token: { value: string; expiresAt: number } | null = null;
  private pending: Promise<string> | null = null;
  private readonly http = new Gaxios();

  constructor(
    private readonly key: ServiceAccountKey,
    private readonly scopes: string[],
    private readonly fallbackMs: number,
  ) {}

  async request<T>(options: GaxiosOptions): Promise<GaxiosResponse<T>> {
    const signal = options.signal ?? requestSignal(this.fallbackMs);
    const token = await this.accessToken();
    return this.http.request<T>({
      ...options,
      headers: Gaxios.mergeHeaders(options.headers, { authorization: `Bearer ${token}` }),
      signal,
    });
  }

  async getRequestHeaders(): Promise<Headers> {
    return new Headers({ authorization: `Bearer ${await this.accessToken()}` });
  }

  private async accessToken(): Promise<string> {
    if (this.token && this.token.expiresAt - 60_000 > Date.now()) return this.token.value;
    this.pending ??= this.fetchToken().finally(() => {
      this.pending = null;
    });
    return this.pending;
  }

  private async fetchToken(): Promise<string> {
    const tokenUri = this.key.token_uri ?? 'https://oauth2.googleapis.com/token';
    const assertion = await new SignJWT({ scope: this.scopes.join(' ') })
      .setProtectedHeader({ alg: 'RS256' })
      .setIssuer(this.key.client_email)
      .setAudience(tokenUri)
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(await importPKCS8(this.key.private_key, 'RS256'));
    const response = await fetch(tokenUri, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
        assertion,
      }),
      // Shared by the calls waiting for it: the first one's deadline.
      signal: requestSignal(this.fallbackMs),
    });
    if (!response.ok) throw new Error(`Google token endpoint: HTTP ${response.status}`);
    const body = (await response.json()) as { access_token?: unknown; expires_in?: unknown };
    if (typeof body.access_token !== 'string') throw new Error('Google token endpoint: no token');
    const seconds = typeof body.expires_in === 'number' ? body.expires_in : 3600;
    this.token = { value: body.access_token, expiresAt: Date.now() + seconds * 1000 };
    return body.access_token;
  }
}
