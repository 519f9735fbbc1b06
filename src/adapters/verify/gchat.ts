import type { JWTVerifyGetKey } from 'jose';
import type { GchatConfig } from '../../config/platformTypes.js';
import { bearer, remoteKeys, verifiedClaims } from './jwt.js';
import type { Headers } from './secrets.js';

const chatIssuer = 'chat@system.gserviceaccount.com';
const chatKeysUrl = `https://www.googleapis.com/service_accounts/v1/jwk/${chatIssuer}`;
const googleKeysUrl = 'https://www.googleapis.com/oauth2/v3/certs';

/**
 * Google Chat's request token, whichever audience the app is set up with: "project
 * number" (a token Chat signs itself, issuer chat@system.gserviceaccount.com) or "HTTP
 * endpoint URL" (a Google ID token for the URL, whose verified email must be Chat's).
 * `jwks_url` replaces both key sets (tests, sovereign clouds).
 */
export function gchatVerifier(config: GchatConfig): (headers: Headers) => Promise<boolean> {
  const chatKeys: JWTVerifyGetKey = remoteKeys(config.jwksUrl ?? chatKeysUrl);
  const googleKeys: JWTVerifyGetKey = config.jwksUrl ? chatKeys : remoteKeys(googleKeysUrl);
  return async (headers) => {
    const token = bearer(headers);
    if (config.projectNumber !== null) {
      const claims = await verifiedClaims(token, chatKeys, {
        issuer: chatIssuer,
        audience: config.projectNumber,
      });
      if (claims) return true;
    }
    if (config.endpointUrl !== null) {
      const claims = await verifiedClaims(token, googleKeys, {
        issuer: ['https://accounts.google.com', 'accounts.google.com'],
        audience: config.endpointUrl,
      });
      return claims?.email === chatIssuer && claims.email_verified === true;
    }
    return false;
  };
}
