import { createRemoteJWKSet, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { header, type Headers } from './secrets.js';

/** The bearer token of a request, or null. */
export function bearer(headers: Headers): string | null {
  const value = header(headers, 'authorization');
  const match = value ? /^Bearer\s+(\S+)$/i.exec(value) : null;
  return match ? (match[1] as string) : null;
}

/** A key set published at a URL, fetched on first use and when an unknown key id appears. */
export function remoteKeys(url: string): JWTVerifyGetKey {
  return createRemoteJWKSet(new URL(url), { timeoutDuration: 10_000 });
}

/**
 * Verifies a token's signature against `keys` and its issuer, audience and times (five
 * minutes of clock skew, as Bot Framework allows). Returns the claims, or null for any
 * failure: the caller answers 401 without saying why.
 */
export async function verifiedClaims(
  token: string | null,
  keys: JWTVerifyGetKey,
  expected: { issuer: string | string[]; audience: string | string[] },
): Promise<JWTPayload | null> {
  if (token === null) return null;
  try {
    const { payload } = await jwtVerify(token, keys, {
      issuer: expected.issuer,
      audience: expected.audience,
      clockTolerance: 300,
      algorithms: ['RS256'],
    });
    return payload;
  } catch {
    return null;
  }
}
