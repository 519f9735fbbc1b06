import { createHash, timingSafeEqual } from 'node:crypto';

/** Constant-time equality of two secrets of any length (compares their digests). */
export function sameSecret(given: string | null | undefined, expected: string): boolean {
  if (typeof given !== 'string' || given.length === 0) return false;
  const digest = (value: string) => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/** Request headers as the verifiers read them: lower-case names, first value. */
export type Headers = Record<string, string | string[] | undefined>;

export function header(headers: Headers, name: string): string | null {
  const value = headers[name];
  return Array.isArray(value) ? (value[0] ?? null) : (value ?? null);
}
