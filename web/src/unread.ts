/**
 * Unread markers: the highest sequence this browser has shown for each session, kept in
 * local storage (per browser, not per account: the protocol has no read receipts).
 */
const prefix = 'parley.seen.';

export function seenSequence(sessionId: string): number {
  try {
    return Number(localStorage.getItem(prefix + sessionId) ?? '0') || 0;
  } catch {
    return 0;
  }
}

export function markSeen(sessionId: string, sequence: number): void {
  try {
    if (sequence > seenSequence(sessionId))
      localStorage.setItem(prefix + sessionId, String(sequence));
  } catch {
    // storage full or disabled: the marker is a convenience
  }
}
