import type { Socket } from 'node:net';
import type { Principal } from '../config/types.js';
import { ParleyError } from '../errors.js';
import { whenClientGone } from './clientGone.js';

/**
 * Open SSE streams per principal on this process (`limits.streams_per_principal`). Taking a
 * slot is one synchronous check-and-increment, so requests that arrive together cannot all
 * pass the check before any of them counts (the count is never read across an `await`).
 * The returned release gives the slot back once, however often it is called.
 */
export class StreamSlots {
  private readonly taken = new Map<string, number>();

  constructor(private readonly limit: number) {}

  /**
   * The slot of one stream request, held while its client is connected: given back when
   * the client leaves — at once, even while the route is still preparing the stream
   * (looking the session up, reading the journal up to the cursor: slow when the
   * database is) — or when the returned release is called. A client that gives up
   * waiting and comes again does not hold two. `too_many_streams` when the principal
   * already holds the limit.
   */
  take(
    request: { raw: { socket: Socket | null } },
    principal: Pick<Principal, 'tenant' | 'user'>,
  ): () => void {
    const release = this.acquire(`${principal.tenant}\u0000${principal.user}`);
    if (!release) {
      throw new ParleyError('too_many_streams', 'this key has too many open event streams', {
        limit: this.limit,
      });
    }
    const unwatch = whenClientGone(request, release);
    return () => {
      unwatch();
      release();
    };
  }

  /** A release function, or null when the principal already holds `limit` streams. */
  private acquire(principal: string): (() => void) | null {
    const held = this.taken.get(principal) ?? 0;
    if (held >= this.limit) return null;
    this.taken.set(principal, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.taken.get(principal) ?? 1) - 1;
      if (left <= 0) this.taken.delete(principal);
      else this.taken.set(principal, left);
    };
  }
}
