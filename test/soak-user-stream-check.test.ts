import { describe, expect, it } from 'vitest';
import { Findings } from '../scripts/soak/checker/findings.js';
import { checkUserStream, type FeedEventRow } from '../scripts/soak/checker/userStream.js';
import type { UserStreamRecord } from '../scripts/soak/userStream.js';

// The soak's rules for the user stream, on a made-up journal and what a follower received:
// every event owed received, nothing received that the journal does not hold, nothing
// twice on one connection.

const events: FeedEventRow[] = [
  { session_id: 's1', sequence: 1, type: 'message', owed: false },
  { session_id: 's1', sequence: 2, type: 'turn_started', owed: true },
  { session_id: 's1', sequence: 5, type: 'done', owed: true },
];
const record = (received: [string, string][], twice: string[] = []): UserStreamRecord => ({
  fromMs: 0,
  received: new Map(received),
  connections: 2,
  twiceOnOneConnection: twice,
});

function check(given: UserStreamRecord) {
  const findings = new Findings();
  const figures = checkUserStream(events, given, findings);
  return { figures, found: findings.violations.map((v) => `${v.category}: ${v.check}`) };
}

describe('the soak checker: the user stream', () => {
  it('passes every owed event received, an earlier one sent besides', () => {
    const { figures, found } = check(
      record([
        ['s1 1', 'message'],
        ['s1 2', 'turn_started'],
        ['s1 5', 'done'],
      ]),
    );
    expect(found).toEqual([]);
    expect(figures).toEqual({ received: 3, owed: 2, connections: 2 });
  });

  it('finds an owed event never received', () => {
    expect(check(record([['s1 2', 'turn_started']])).found).toEqual([
      'lost: user stream delivered',
    ]);
  });

  it('finds an event the journal does not hold, or holds as another type', () => {
    const received: [string, string][] = [
      ['s1 2', 'turn_started'],
      ['s1 5', 'done'],
    ];
    expect(check(record([...received, ['s1 9', 'done']])).found).toEqual([
      'mismatch: user stream names journal events',
    ]);
    expect(check(record([['s1 2', 'message'], received[1] as [string, string]])).found).toEqual([
      'mismatch: user stream names journal events',
    ]);
  });

  it('finds an event sent twice on one connection', () => {
    const received: [string, string][] = [
      ['s1 2', 'turn_started'],
      ['s1 5', 'done'],
    ];
    expect(check(record(received, ['s1 5'])).found).toEqual([
      'doubled: user stream once per connection',
    ]);
  });
});
