import { createHash } from 'node:crypto';

/**
 * The trace of a turn, the same on every worker and after every crash: the first 16 bytes
 * of sha256(tenant, a NUL byte, turn id), as 32 lowercase hex digits. A turn resumed by
 * another worker (its lease expired), after an approval or after a pivot lands in the
 * trace its first run started; anyone who knows the tenant and the turn id can find it.
 */
export function turnTraceId(tenant: string, turnId: string): string {
  return createHash('sha256').update(`${tenant}\0${turnId}`).digest('hex').slice(0, 32);
}
