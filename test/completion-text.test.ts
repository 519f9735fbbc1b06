import { describe, expect, it } from 'vitest';
import { completedReply } from '../src/runtime/finish.js';

describe("completion_text: the reply's closing sentence", () => {
  const fixed = 'Anything else?';
  it.each([
    ['Done. See you soon.', 'Done. Anything else?'],
    ['First line!\n\nSecond one? Third', 'First line!\n\nSecond one? Anything else?'],
    ['He said "stop." Then left.  ', 'He said "stop." Anything else?'],
    ['One sentence only.', 'Anything else?'],
    ['no terminator at all', 'Anything else?'],
    ['', 'Anything else?'],
    ['Version 2.5 is out. Try it', 'Version 2.5 is out. Anything else?'],
    ['Wait… what?', 'Wait… Anything else?'],
  ])('%j → %j', (reply, expected) => {
    expect(completedReply(reply, fixed, 'closing_sentence')).toBe(expected);
  });

  it('replaces the whole reply with `reply`', () => {
    expect(completedReply('Done. See you soon.', fixed, 'reply')).toBe(fixed);
  });
});
