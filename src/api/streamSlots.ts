/**
 * Open SSE streams per principal on this process (`limits.streams_per_principal`). Taking a
 * slot is one synchronous check-and-increment, so requests that arrive together cannot all
 * pass the check before any of them counts (the count is never read across an `await`).
 * The returned release gives the slot back once, however often it is called.
 */
export class StreamSlots {
  private readonly taken = new Map<string, number>();

  constructor(private readonly limit: number) {}

  /** A release function, or null when the principal already holds `limit` streams. */
  acquire(principal: string): (() => void) | null {
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
