import { describe, expect, it } from 'vitest';
import { planNudges } from '../src/runtime/approvalNudges.js';

// What an approval does by itself while it waits (docs/governance.md, "Escalation and
// reminders"): its chain's steps after the request, its reminder before the deadline, in
// time order; nothing at or after the deadline, no reminder without one.

const now = Date.parse('2026-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(now + ms).toISOString();

describe('planNudges', () => {
  it('orders the escalation steps and the reminder by time', () => {
    expect(
      planNudges(now, {
        timeoutMs: 3_600_000,
        onTimeout: 'reject',
        escalate: [
          { afterMs: 900_000, to: 'role:lead' },
          { afterMs: 3_300_000, to: 'user:cfo' },
        ],
        remindBeforeMs: 600_000,
      }),
    ).toEqual([
      { at: at(900_000), kind: 'escalate', step: 1, to: 'role:lead' },
      { at: at(3_000_000), kind: 'remind' },
      { at: at(3_300_000), kind: 'escalate', step: 2, to: 'user:cfo' },
    ]);
  });

  it('drops what would come at or after the deadline, and a reminder before the request', () => {
    expect(
      planNudges(now, {
        timeoutMs: 1_000,
        onTimeout: 'reject',
        escalate: [
          { afterMs: 500, to: 'role:lead' },
          { afterMs: 1_000, to: 'role:admin' },
        ],
        remindBeforeMs: 5_000,
      }),
    ).toEqual([{ at: at(500), kind: 'escalate', step: 1, to: 'role:lead' }]);
  });

  it('escalates an approval without a deadline, but never reminds of one', () => {
    expect(
      planNudges(now, {
        timeoutMs: null,
        onTimeout: 'reject',
        escalate: [{ afterMs: 60_000, to: 'user:boss' }],
        remindBeforeMs: 1_000,
      }),
    ).toEqual([{ at: at(60_000), kind: 'escalate', step: 1, to: 'user:boss' }]);
    expect(
      planNudges(now, { timeoutMs: null, onTimeout: 'reject', escalate: [], remindBeforeMs: null }),
    ).toEqual([]);
  });
});
