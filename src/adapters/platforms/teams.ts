import { TeamsAdapter } from '@chat-adapter/teams';
import type { TeamsConfig } from '../../config/platformTypes.js';
import type { Logger } from '../../log.js';
import { chatLogger } from '../logger.js';
import { teamsVerifier } from '../verify/teams.js';
import { requestSignal, sdkCalls } from './call.js';
import { secret, type Env, type PlatformClient } from './types.js';

/**
 * The bot's outbound tokens: the client-credentials grant at `token_url` (default
 * Entra's, for the app's tenant or botframework.com for a multi-tenant app), one cached
 * token per scope until a minute before it expires. The Teams SDK's own client cannot
 * be pointed at another endpoint; this replaces it through the adapter's `token` option.
 */
export function botFrameworkTokens(config: TeamsConfig, password: string) {
  const cache = new Map<string, { value: string; expiresAt: number }>();
  const url =
    config.tokenUrl ??
    `https://login.microsoftonline.com/${config.appTenantId ?? 'botframework.com'}/oauth2/v2.0/token`;
  return async (scope: string | string[]): Promise<string> => {
    const wanted = Array.isArray(scope) ? scope.join(' ') : scope;
    const cached = cache.get(wanted);
    if (cached && cached.expiresAt - 60_000 > Date.now()) return cached.value;
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: config.appId,
        client_secret: password,
        scope: wanted,
      }),
      signal: requestSignal(config.timeoutMs),
    });
    if (!response.ok) throw new Error(`Teams token endpoint: HTTP ${response.status}`);
    const body = (await response.json()) as { access_token?: unknown; expires_in?: unknown };
    if (typeof body.access_token !== 'string') throw new Error('Teams token endpoint: no token');
    const seconds = typeof body.expires_in === 'number' ? body.expires_in : 3600;
    cache.set(wanted, { value: body.access_token, expiresAt: Date.now() + seconds * 1000 });
    return body.access_token;
  };
}

/** The Teams SDK's HTTP client (axios underneath), as far as Parley touches it. */
interface TeamsHttpClient {
  use(interceptor: {
    request: (context: { config: { signal?: unknown } }) => { signal?: unknown };
  }): number;
}

/**
 * Puts every request of the Teams SDK under a deadline: the current platform call's
 * signal (see `call.ts`), or `fallbackMs` outside one. The SDK's app sends through three
 * HTTP clients made when it is built (its base client, whose later copies serve other
 * service URLs; the API client; the activity sender, which posts and types), each copied
 * from the base before anything could be added to it: the interceptor goes on all three.
 */
function deadlineOnRequests(adapter: TeamsAdapter, fallbackMs: number): void {
  const app = (
    adapter as unknown as {
      app: {
        client: TeamsHttpClient;
        api: { http: TeamsHttpClient };
        activitySender: { client: TeamsHttpClient };
      };
    }
  ).app;
  const interceptor = {
    request: ({ config }: { config: { signal?: unknown } }) => {
      config.signal ??= requestSignal(fallbackMs);
      return config;
    },
  };
  for (const client of [app.client, app.api.http, app.activitySender.client]) {
    client.use(interceptor);
  }
}

/**
 * Teams through the SDK's adapter. Parley verifies the Bot Framework token itself (keys
 * from `openid_url`) before the SDK sees the request; `api_url` pins the service URL of
 * every outbound call (a gateway, a test's fake). The connector has no idempotency key
 * and no way for a bot to read a conversation back: a post whose answer is lost is posted
 * again (docs/adapters.md, "Never posted twice").
 */
export function teamsClient(config: TeamsConfig, env: Env, log: Logger): PlatformClient {
  const adapter = new TeamsAdapter({
    appId: config.appId,
    ...(config.appTenantId
      ? { appTenantId: config.appTenantId, appType: 'SingleTenant' as const }
      : { appType: 'MultiTenant' as const }),
    token: botFrameworkTokens(config, secret(env, config.appPasswordEnv)),
    ...(config.apiUrl ? { apiUrl: config.apiUrl } : {}),
    // Already verified by Parley (below, before the SDK parses anything).
    webhookVerifier: () => true,
    logger: chatLogger(log, 'teams'),
  });
  deadlineOnRequests(adapter, config.timeoutMs);
  const verify = teamsVerifier(config);
  return {
    name: 'teams',
    config,
    adapter,
    verify,
    ...sdkCalls(adapter),
  };
}
