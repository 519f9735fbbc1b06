import { expect, it } from 'vitest';
import { linkedSignal } from '../src/linkedSignal.js';

it('aborts with the reason of the first source that aborts, until disposed', () => {
  const first = new AbortController();
  const second = new AbortController();
  const linked = linkedSignal(first.signal, second.signal);
  expect(linked.signal.aborted).toBe(false);
  const reason = new Error('stalled');
  second.abort(reason);
  expect(linked.signal.aborted).toBe(true);
  expect(linked.signal.reason).toBe(reason);
  first.abort(new Error('later'));
  expect(linked.signal.reason).toBe(reason);

  // Disposed: a source's abort no longer reaches it.
  const third = new AbortController();
  const unlinked = linkedSignal(third.signal);
  unlinked.dispose();
  third.abort(new Error('after dispose'));
  expect(unlinked.signal.aborted).toBe(false);
});

it('starts aborted, with its reason, when a source already is', () => {
  const reason = new Error('cancelled');
  const done = AbortSignal.abort(reason);
  const linked = linkedSignal(new AbortController().signal, done);
  expect(linked.signal.aborted).toBe(true);
  expect(linked.signal.reason).toBe(reason);
  linked.dispose();
});
