/**
 * Client-made idempotency keys (PROTOCOL.md: 1-128 characters of `[A-Za-z0-9_-]`): a
 * prefix, the time (so keys sort roughly by creation) and 80 random bits.
 */
export function newClientKey(prefix: 'turn' | 'cancel' | 'form'): string {
  const random = new Uint8Array(10);
  globalThis.crypto.getRandomValues(random);
  const hex = Array.from(random, (byte) => byte.toString(16).padStart(2, '0')).join('');
  return `${prefix}_${Date.now().toString(36)}${hex}`;
}
