import { createRemoteJWKSet, type JWTVerifyGetKey } from 'jose';
import type { TeamsConfig } from '../../config/platformTypes.js';
import { bearer, verifiedClaims } from './jwt.js';
import type { Headers } from './secrets.js';

const botFrameworkIssuer = 'https://api.botframework.com';

/**
 * Bot Framework's request token: signed by a key from the OpenID configuration's
 * `jwks_uri`, issued by api.botframework.com for this app id, and naming the very
 * service URL the activity says it comes from (so a token cannot be replayed with
 * another conversation's endpoint).
 */
export function teamsVerifier(
  config: TeamsConfig,
): (headers: Headers, raw: Buffer) => Promise<boolean> {
  let keys: Promise<JWTVerifyGetKey> | null = null;
  const loadKeys = () =>
    (keys ??= (async () => {
      const response = await fetch(config.openidUrl, { signal: AbortSignal.timeout(10_000) });
      if (!response.ok) throw new Error(`OpenID configuration: HTTP ${response.status}`);
      const openid = (await response.json()) as { jwks_uri?: unknown };
      if (typeof openid.jwks_uri !== 'string') throw new Error('OpenID configuration: no jwks_uri');
      return createRemoteJWKSet(new URL(openid.jwks_uri), { timeoutDuration: 10_000 });
    })().catch((error: unknown) => {
      keys = null;
      throw error;
    }));
  return async (headers, raw) => {
    const token = bearer(headers);
    if (token === null) return false;
    let getKey: JWTVerifyGetKey;
    try {
      getKey = await loadKeys();
    } catch {
      return false;
    }
    const claims = await verifiedClaims(token, getKey, {
      issuer: botFrameworkIssuer,
      audience: config.appId,
    });
    if (!claims) return false;
    let activity: { serviceUrl?: unknown };
    try {
      activity = JSON.parse(raw.toString('utf8')) as { serviceUrl?: unknown };
    } catch {
      return false;
    }
    const claimed = claims.serviceurl ?? claims.serviceUrl;
    return (
      typeof claimed === 'string' &&
      typeof activity.serviceUrl === 'string' &&
      claimed.replace(/\/+$/, '') === activity.serviceUrl.replace(/\/+$/, '')
    );
  };
}
