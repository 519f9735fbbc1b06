import { createHash } from 'node:crypto';

/**
 * JSON with every object's keys sorted and no whitespace: the same arguments always give
 * the same text, whatever order a model wrote them in.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value))
    return `[${value.map((item) => canonicalJson(item ?? null)).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/**
 * The `arguments_digest` of an approval: sha-256 (hex) of the canonical JSON of the
 * arguments it shows. An answer that names it approves exactly those arguments.
 */
export function argumentsDigest(args: unknown): string {
  return createHash('sha256').update(canonicalJson(args)).digest('hex');
}
