import { BlockList, isIPv4, isIPv6 } from 'node:net';

/*
 * Addresses http_fetch refuses unless an agent sets `allow_private: true`: everything a
 * public name must never lead a server-side request to (SSRF) — loopback, private and
 * carrier-grade NAT ranges, link-local (cloud metadata at 169.254.169.254), multicast,
 * reserved and documentation ranges, and their IPv6 counterparts.
 */
const internal = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  internal.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  internal.addSubnet(network, prefix, 'ipv6');
}

/** The 8 hextets of an IPv6 address (no zone), or null. */
function hextets(address: string): number[] | null {
  let text = address.toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const parts = (dotted[1] as string).split('.').map(Number);
    const high = (((parts[0] ?? 0) << 8) | (parts[1] ?? 0)).toString(16);
    const low = (((parts[2] ?? 0) << 8) | (parts[3] ?? 0)).toString(16);
    text = `${text.slice(0, dotted.index)}${high}:${low}`;
  }
  const [head = '', tail] = text.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const missing = 8 - left.length - right.length;
  if (tail === undefined ? left.length !== 8 : missing < 1) return null;
  const all = [...left, ...Array<string>(tail === undefined ? 0 : missing).fill('0'), ...right];
  const values = all.map((part) => Number.parseInt(part, 16));
  return values.some((value) => Number.isNaN(value)) ? null : values;
}

/** The IPv4 address an IPv6 one carries (IPv4-mapped ::ffff:a.b.c.d, NAT64 64:ff9b::/96). */
function embeddedIPv4(address: string): string | null {
  const parts = hextets(address);
  if (!parts) return null;
  const mapped = parts.slice(0, 5).every((part) => part === 0) && parts[5] === 0xffff;
  const nat64 = parts[0] === 0x64 && parts[1] === 0xff9b && parts.slice(2, 6).every((p) => !p);
  if (!mapped && !nat64) return null;
  const high = parts[6] ?? 0;
  const low = parts[7] ?? 0;
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
}

/** True for an address a public request must not reach (and for anything unparsable). */
export function isInternalAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  if (isIPv4(bare)) return internal.check(bare, 'ipv4');
  if (!isIPv6(bare)) return true;
  const embedded = embeddedIPv4(bare);
  if (embedded) return internal.check(embedded, 'ipv4');
  return internal.check(bare, 'ipv6');
}
