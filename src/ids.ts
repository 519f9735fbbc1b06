import { randomBytes } from 'node:crypto';
import { monotonicFactory } from 'ulid';

const nextUlid = monotonicFactory();

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

/** A lease token is a capability: unguessable, never reused. */
export function newLeaseToken(): string {
  return randomBytes(18).toString('base64url');
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

/** A memory's id is made when a turn buffers it, so the model can cite it before commit. */
export function newMemoryId(): string {
  return `mem_${nextUlid()}`;
}

/** Identifies one buffered effect: applying it twice is a no-op (applyMemoryEffects). */
export function newEffectId(): string {
  return `eff_${nextUlid()}`;
}
