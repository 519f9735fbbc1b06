import { createHash, timingSafeEqual } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { FastifyRequest } from 'fastify';
import { devPrincipal, type Config, type Principal } from '../config/types.js';
import { ParleyError } from '../errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
  }
}

/** Is this IP address a loopback address (127.0.0.0/8, ::1, or ::ffff:127.x.y.z)? */
export function isLoopbackAddress(address: string): boolean {
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  if (isIP(v4) === 4) return v4.startsWith('127.');
  return address === '::1' || address === '0:0:0:0:0:0:0:1';
}

/**
 * PROTOCOL.md, "Principals": no keys is allowed only on loopback. Decided from the
 * addresses the host resolves to, not from its name (`127.evil.example` may resolve
 * anywhere). Checked before listening; an unresolvable host fails start-up.
 */
export async function assertBindAllowed(
  config: Config,
  resolve: (host: string) => Promise<string[]> = async (host) =>
    (await lookup(host, { all: true })).map((found) => found.address),
): Promise<void> {
  if (config.auth.mode !== 'dev') return;
  const host = config.server.host.replace(/^\[(.*)\]$/, '$1');
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : await resolve(host);
  } catch {
    throw new Error(`cannot resolve server.host ${config.server.host}`);
  }
  if (addresses.length === 0 || !addresses.every(isLoopbackAddress)) {
    throw new Error(
      `refusing to listen on ${config.server.host} without API keys: configure auth.keys, or bind to 127.0.0.1`,
    );
  }
}

/**
 * Resolves the request's principal from `Authorization: Bearer <key>`. Keys are compared
 * by their sha256, in constant time; the key itself is never stored or logged.
 */
export function authenticate(config: Config, request: FastifyRequest): Principal {
  if (config.auth.mode === 'dev') return devPrincipal;
  const header = request.headers.authorization;
  const match = typeof header === 'string' ? /^Bearer\s+(\S+)$/i.exec(header) : null;
  if (!match)
    throw new ParleyError('unauthorized', 'an API key is required (Authorization: Bearer <key>)');
  const digest = createHash('sha256')
    .update(match[1] as string)
    .digest();
  for (const key of config.auth.keys) {
    if (timingSafeEqual(digest, Buffer.from(key.sha256, 'hex'))) return key.principal;
  }
  throw new ParleyError('unauthorized', 'the API key is not valid');
}

/**
 * Deployment-wide actions (the model catalog's sync, prune, metrics) are the operator's:
 * a key marked `operator: true`, or the dev-mode principal. A tenant's admin is not one.
 */
export function requireOperator(principal: Principal): void {
  if (!principal.operator) {
    throw new ParleyError(
      'forbidden',
      "this is a deployment-wide action: it needs the operator's API key",
    );
  }
}

export { hasRole, isAddressed } from '../config/principals.js';
