import { createHash, randomFillSync } from 'node:crypto';
import { monotonicFactory } from 'ulid';

/**
 * Random fractions in [0, 1) for ulid, one random byte each (as ulid's own source), drawn
 * from a pool refilled by one `randomFillSync` call: ulid asks for sixteen per id, and a
 * crypto call per byte cost more than the rest of the id.
 */
export function pooledRandom(poolBytes = 4096): () => number {
  const pool = new Uint8Array(poolBytes);
  let next = poolBytes;
  return () => {
    if (next === poolBytes) {
      randomFillSync(pool);
      next = 0;
    }
    return (pool[next++] as number) / 256;
  };
}

const nextUlid = monotonicFactory(pooledRandom());

/** Server-made identifiers: URL-safe and sortable by creation time (ULID). */
export function newSessionId(): string {
  return nextUlid();
}

export function newMessageId(): string {
  return `msg_${nextUlid()}`;
}

export function newRequestId(): string {
  return `req_${nextUlid()}`;
}

const tokenBytes = 18;
const tokenPool = Buffer.alloc(tokenBytes * 256);
let tokenNext = tokenPool.length;

/**
 * A lease token is a capability: unguessable, never reused. Eighteen bytes of the
 * CSPRNG each, taken from a pool refilled by one `randomFillSync` (a call per token cost
 * microseconds; as `randomUUID` does).
 */
export function newLeaseToken(): string {
  if (tokenNext === tokenPool.length) {
    randomFillSync(tokenPool);
    tokenNext = 0;
  }
  const token = tokenPool.toString('base64url', tokenNext, tokenNext + tokenBytes);
  tokenNext += tokenBytes;
  return token;
}

/** Client-made idempotency keys (`turn_id`, `command_id`): PROTOCOL.md, "Identifiers". */
export const clientKeyPattern = /^[A-Za-z0-9_-]{1,128}$/;

/** The command id of an unblock whose client sent none (a client key: `[A-Za-z0-9_-]`). */
export function newUnblockCommandId(): string {
  return `unblock_${nextUlid()}`;
}

export function newAttachmentId(): string {
  return `att_${nextUlid()}`;
}

/**
 * An id derived from a client's `Idempotency-Key` and its scope (tenant, user, ...): the
 * same key in the same scope is the same id, so a retried upload stores nothing twice.
 */
export function keyedId(prefix: string, scope: string[]): string {
  const digest = createHash('sha256').update(scope.join('\0')).digest('hex');
  return `${prefix}_k${digest.slice(0, 32)}`;
}

export function newWorkspaceId(): string {
  return `ws_${nextUlid()}`;
}

/** A memory's id is made when a turn buffers it, so the model can cite it before commit. */
export function newMemoryId(): string {
  return `mem_${nextUlid()}`;
}

/** A panel's id is made when it is shown (by a person, or by a tool before its turn commits). */
export function newPanelId(): string {
  return `pnl_${nextUlid()}`;
}

/** Identifies one buffered effect: applying it twice is a no-op (applyMemoryEffects). */
export function newEffectId(): string {
  return `eff_${nextUlid()}`;
}

/** A photo's id (the library: src/store/photos.ts); image generation makes one per image. */
export function newPhotoId(): string {
  return `ph_${nextUlid()}`;
}
