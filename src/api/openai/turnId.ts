import { randomUUID } from 'node:crypto';
import { idempotencyKeyOf } from '../validate.js';

/** A request's turn id: the client's `Idempotency-Key` when it sends one, else a new one. */
export function turnIdFrom(header: string | string[] | undefined): string {
  return idempotencyKeyOf(header) ?? `oai_${randomUUID().replaceAll('-', '')}`;
}
