import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { devPrincipal, type Config, type Principal } from '../config/types.js';
import { ParleyError } from '../errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
  }
}

const loopbackHosts = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

export function isLoopback(host: string): boolean {
  return loopbackHosts.has(host) || host.startsWith('127.');
}

/** PROTOCOL.md, "Principals": no keys is allowed only on loopback. Checked before listening. */
export function assertBindAllowed(config: Config): void {
  if (config.auth.mode === 'dev' && !isLoopback(config.server.host)) {
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

export function hasRole(principal: Principal, role: string): boolean {
  return principal.roles.includes('*') || principal.roles.includes(role);
}
