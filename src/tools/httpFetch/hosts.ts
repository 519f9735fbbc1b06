/**
 * An agent's `allow_hosts`: `api.example.com` (that host, on the scheme's default port),
 * `*.example.com` (any subdomain, not the bare domain), `host:8443` (that port only),
 * `127.0.0.1:9000` or `[::1]:9000` (an address, which still needs `allow_private` when it
 * is internal). Compiled once at start; entries that do not parse fail the configuration.
 */
export interface HostRule {
  host: string;
  wildcard: boolean;
  port: number | null;
}

const entryPattern =
  /^(?<wildcard>\*\.)?(?<host>[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*|\[[0-9a-f:.]+\])(?::(?<port>\d{1,5}))?$/;

export function parseHostRule(entry: string): HostRule | null {
  const match = entryPattern.exec(entry.trim().toLowerCase().replace(/\.$/, ''));
  if (!match?.groups) return null;
  const port = match.groups.port === undefined ? null : Number(match.groups.port);
  if (port !== null && (port < 1 || port > 65535)) return null;
  return {
    host: (match.groups.host as string).replace(/^\[|\]$/g, ''),
    wildcard: match.groups.wildcard !== undefined,
    port,
  };
}

/** The URL's port as a number, the scheme's default when none is written. */
export function effectivePort(url: URL): number {
  if (url.port) return Number(url.port);
  return url.protocol === 'https:' ? 443 : 80;
}

/** Whether `url` (http or https) may be fetched under these rules. */
export function hostAllowed(rules: readonly HostRule[], url: URL): boolean {
  const host = url.hostname
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '');
  const port = effectivePort(url);
  return rules.some((rule) => {
    const hostMatches = rule.wildcard ? host.endsWith(`.${rule.host}`) : host === rule.host;
    const portMatches = rule.port === null ? url.port === '' : port === rule.port;
    return hostMatches && portMatches;
  });
}
