import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { ToolError } from '../types.js';
import { isInternalAddress } from './addresses.js';

/** Name resolution, injected so tests can make a public-looking name resolve inward. */
export type Resolve = (hostname: string) => Promise<LookupAddress[]>;

export const systemResolve: Resolve = (hostname) =>
  dnsLookup(hostname, { all: true, verbatim: true });

/** Refuses an internal address unless allowed; the same check for names and literals. */
export function checkAddress(hostname: string, address: string, allowPrivate: boolean): void {
  if (!allowPrivate && isInternalAddress(address)) {
    throw new ToolError(
      'not_allowed',
      `${hostname} resolves to an internal address (${address}); http_fetch does not reach ` +
        'loopback, private or link-local networks unless the agent sets allow_private',
    );
  }
}

/**
 * The `lookup` a socket connects through: resolves once, checks every address, and hands
 * the checked addresses to the socket, which connects to exactly those — there is no
 * second resolution for a DNS answer to change between check and connect. A name with
 * any internal address is refused whole. Any failure is kept in `failures` so the tool
 * can report it as its own error rather than as a bare connection error.
 */
export function guardedLookup(
  resolve: Resolve,
  allowPrivate: boolean,
  failures: ToolError[],
): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname)
      .then((addresses) => {
        if (addresses.length === 0) {
          throw new ToolError('not_found', `${hostname} has no address`);
        }
        for (const { address } of addresses) checkAddress(hostname, address, allowPrivate);
        const family = typeof options === 'object' ? options.family : undefined;
        const wanted =
          family === 4 || family === 6 ? addresses.filter((a) => a.family === family) : addresses;
        const chosen = wanted.length > 0 ? wanted : addresses;
        if (typeof options === 'object' && options.all) callback(null, chosen);
        else
          callback(null, (chosen[0] as LookupAddress).address, (chosen[0] as LookupAddress).family);
      })
      .catch((error: unknown) => {
        const failure =
          error instanceof ToolError
            ? error
            : new ToolError('not_found', `cannot resolve ${hostname}`);
        failures.push(failure);
        callback(failure, '', 0);
      });
  };
}
