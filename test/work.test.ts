import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../src/log.js';
import type { Db } from '../src/store/db.js';
import { notifyWakeup, Wakeups } from '../src/store/wakeups.js';
import { backoffMs } from '../src/time/backoff.js';
import { ClaimLoop, type ClaimKind } from '../src/work/claimLoop.js';
import { startOutboxLoop, type OutboxKind } from '../src/work/outboxLoop.js';
import { startTimedLoop } from '../src/work/timedLoop.js';
import { openTestDb } from './support/db.js';
import { until } from './support/poll.js';

const log = createLogger({ level: 'silent' });
/** Longer than any test: a loop that reaches its poll interval has missed a wake-up. */
const never = 600_000;

/** A promise and its resolve, to hold a handler until the test lets it go. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open = () => {};
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

describe('the engine (src/work)', () => {
  let db: Db;
  let close: () => Promise<void>;
  let wakeups: Wakeups;

  beforeEach(async () => {
    ({ db, close } = await openTestDb());
    wakeups = new Wakeups(db);
    await wakeups.start();
  });

  afterEach(async () => {
    await wakeups.stop();
    await close();
  });

  it('runs the next round at once when woken during a round', async () => {
    let rounds = 0;
    let loop: ReturnType<typeof startTimedLoop> | null = null;
    loop = startTimedLoop({
      name: 'test',
      log,
      pollMs: never,
      minSleepMs: 1,
      round: async () => {
        rounds += 1;
        // Woken while the round is still working (after the loop has started).
        await new Promise((resolve) => setImmediate(resolve));
        if (rounds === 1) loop?.wake();
        return {};
      },
    });
    await until(
      () => rounds,
      (n) => n >= 2,
      'the second round',
    );
    await loop.stop();
    expect(rounds).toBe(2);
  });

  it('wakes once per sleep: repeated wake-ups do not abort an aborted signal again', async () => {
    let rounds = 0;
    let aborts = -1;
    let loop: ReturnType<typeof startTimedLoop> | null = null;
    const abort = vi.spyOn(AbortController.prototype, 'abort');
    try {
      loop = startTimedLoop({
        name: 'test',
        log,
        pollMs: never,
        minSleepMs: 1,
        round: async () => {
          rounds += 1;
          await new Promise((resolve) => setImmediate(resolve));
          if (rounds === 1) {
            abort.mockClear();
            for (let i = 0; i < 5; i++) loop?.wake();
            aborts = abort.mock.calls.length;
          }
          return {};
        },
      });
      await until(
        () => rounds,
        (n) => n >= 2,
        'the second round',
      );
      await loop.stop();
    } finally {
      abort.mockRestore();
    }
    expect(rounds).toBe(2);
    // Only the first of the round's five wake-ups aborted its signal.
    expect(aborts).toBe(1);
  });

  it('holds a claim loop to its capacity, claims again as handlers end, and drains on stop', async () => {
    const queue = [1, 2, 3, 4, 5];
    const gates = new Map<number, ReturnType<typeof gate>>();
    let running = 0;
    let most = 0;
    const handled: number[] = [];
    const kind: ClaimKind<number> = {
      name: 'test',
      capacity: 2,
      claim: async (limit) => queue.splice(0, limit),
      onWakeup: () => {},
      handle: async (item) => {
        running += 1;
        most = Math.max(most, running);
        const held = gate();
        gates.set(item, held);
        await held.promise;
        running -= 1;
        handled.push(item);
      },
      describe: (item) => ({ item }),
    };
    const loop = new ClaimLoop(kind, { wakeups, log, pollMs: never, graceMs: never });
    loop.start();
    await until(
      () => gates.size,
      (n) => n === 2,
      'two items in hand',
    );
    expect(loop.size).toBe(2);
    for (let next = 1; next <= 5; next++) {
      await until(
        () => gates.get(next),
        (held) => held !== undefined,
        `item ${next}`,
      );
      gates.get(next)?.open();
    }
    await until(
      () => handled.length,
      (n) => n === 5,
      'every item handled',
    );
    await loop.stop();
    expect(most).toBe(2);
    expect(handled.sort()).toEqual([1, 2, 3, 4, 5]);
  });

  it('counts slots held for items claimed elsewhere against its capacity, and runs adopted ones', async () => {
    const queue: number[] = [];
    const limits: number[] = [];
    const gates = new Map<number, ReturnType<typeof gate>>();
    const handled: number[] = [];
    const kind: ClaimKind<number> = {
      name: 'test',
      capacity: 3,
      claim: async (limit) => {
        limits.push(limit);
        return queue.splice(0, limit);
      },
      onWakeup: (wakeup, wake) => {
        if (wakeup.kind === 'input') wake();
      },
      handle: async (item) => {
        const held = gate();
        gates.set(item, held);
        await held.promise;
        handled.push(item);
      },
      describe: (item) => ({ item }),
    };
    const loop = new ClaimLoop(kind, { wakeups, log, pollMs: never, graceMs: never });
    // Not started: no slot.
    expect(loop.reserve()).toBeNull();
    loop.start();
    await until(
      () => limits.length,
      (n) => n === 1,
      'the first (empty) claim',
    );
    const first = loop.reserve();
    const second = loop.reserve();
    expect(first).not.toBeNull();
    expect(second).not.toBeNull();
    first?.adopt(10);
    expect(loop.size).toBe(1);
    // A slot is used once.
    first?.adopt(11);
    first?.release();
    expect(loop.size).toBe(1);
    // One handler and one held slot: a claim may fill the one slot left, not two.
    queue.push(1, 2, 3);
    await notifyWakeup(db, { kind: 'input', sessionId: 's1', sequence: 1 });
    await until(
      () => limits.length,
      (n) => n === 2,
      'a claim for the free slot',
    );
    expect(limits[1]).toBe(1);
    expect(loop.reserve()).toBeNull();
    // The held slot given back unused: the full loop claims into it at once.
    second?.release();
    await until(
      () => limits.length,
      (n) => n === 3,
      'a claim for the slot given back',
    );
    expect(limits[2]).toBe(1);
    expect(loop.size).toBe(3);
    await until(
      () => gates.size,
      (n) => n === 3,
      'items 10, 1 and 2 in hand',
    );
    for (const held of gates.values()) held.open();
    await until(
      () => gates.get(3),
      (held) => held !== undefined,
      'item 3, claimed as a handler ended',
    );
    gates.get(3)?.open();
    await until(
      () => handled.length,
      (n) => n === 4,
      'every item handled',
    );
    await loop.stop();
    expect(handled.sort((a, b) => a - b)).toEqual([1, 2, 3, 10]);
    expect(loop.reserve()).toBeNull();
  });

  it('aborts running handlers once the grace period is over', async () => {
    let claimed = false;
    let sawHardStop = false;
    const kind: ClaimKind<string> = {
      name: 'test',
      capacity: 1,
      claim: async () => (claimed ? [] : ((claimed = true), ['stuck'])),
      onWakeup: () => {},
      handle: async (_item, control) => {
        await new Promise<void>((resolve) =>
          control.hardStop.addEventListener('abort', () => resolve(), { once: true }),
        );
        sawHardStop = control.shutdown.aborted && control.hardStop.aborted;
      },
      describe: (item) => ({ item }),
    };
    const loop = new ClaimLoop(kind, { wakeups, log, pollMs: never, graceMs: 10 });
    loop.start();
    await until(
      () => loop.size,
      (n) => n === 1,
      'the item in hand',
    );
    await loop.stop();
    expect(sawHardStop).toBe(true);
    expect(loop.size).toBe(0);
  });

  it('says on stop how many items in hand finished and how many were handed over', async () => {
    const lines: string[] = [];
    const capture = new Writable({
      write(chunk, _encoding, done) {
        lines.push(...String(chunk).split('\n').filter(Boolean));
        done();
      },
    });
    const items = ['prompt', 'stuck'];
    const kind: ClaimKind<string> = {
      name: 'test',
      capacity: 2,
      claim: async (limit) => items.splice(0, limit),
      onWakeup: () => {},
      // `prompt` finishes its unit when the stop begins; `stuck` only when aborted.
      handle: (item, control) =>
        new Promise<void>((resolve) => {
          const signal = item === 'prompt' ? control.shutdown : control.hardStop;
          signal.addEventListener('abort', () => resolve(), { once: true });
        }),
      describe: (item) => ({ item }),
    };
    const loop = new ClaimLoop(kind, {
      wakeups,
      log: createLogger({ level: 'info', destination: capture }),
      pollMs: never,
      graceMs: 10,
    });
    loop.start();
    await until(
      () => loop.size,
      (n) => n === 2,
      'both items in hand',
    );
    await loop.stop();
    const summary = lines.map((line) => JSON.parse(line)).find((entry) => 'handed_over' in entry);
    expect(summary).toMatchObject({
      kind: 'test',
      running: 2,
      finished: 1,
      handed_over: 1,
      grace_ms: 10,
    });
  });

  it('claims at once on a wake-up its kind asks for', async () => {
    const queue: string[] = [];
    const handled: string[] = [];
    const kind: ClaimKind<string> = {
      name: 'test',
      capacity: 4,
      claim: async (limit) => queue.splice(0, limit),
      onWakeup: (wakeup, wake) => {
        if (wakeup.kind === 'input') wake();
      },
      handle: async (item) => {
        handled.push(item);
      },
      describe: (item) => ({ item }),
    };
    const loop = new ClaimLoop(kind, { wakeups, log, pollMs: never, graceMs: never });
    loop.start();
    queue.push('s1');
    await notifyWakeup(db, { kind: 'input', sessionId: 's1', sequence: 1 });
    await until(
      () => handled,
      (items) => items.length === 1,
      'the woken item',
    );
    await loop.stop();
    expect(handled).toEqual(['s1']);
  });

  it('follows woken sessions once per round and sends in batches until a short one', async () => {
    const followed: string[] = [];
    const rows = ['a', 'b', 'c', 'd', 'e'];
    const claims: number[] = [];
    const sent: string[] = [];
    const kind: OutboxKind<string, string> = {
      name: 'test',
      batchSize: 2,
      behind: async (input) => input.sessionIds ?? [],
      key: (sessionId) => sessionId,
      follow: async (sessionId) => {
        followed.push(sessionId);
        return { changed: true, more: false };
      },
      claim: async (_token, limit) => {
        const batch = rows.splice(0, limit);
        claims.push(batch.length);
        return batch;
      },
      send: async (row) => {
        sent.push(row);
      },
      nextDueMs: async () => null,
    };
    const outbox = startOutboxLoop(kind, { wakeups, log, pollMs: never });
    await until(
      () => sent.length,
      (n) => n === 5,
      'every row sent',
    );
    await notifyWakeup(db, { kind: 'events', sessionId: 's1', sequence: 2 });
    await until(
      () => followed,
      (sessions) => sessions.includes('s1'),
      'the woken session followed',
    );
    await outbox.stop();
    expect(claims.slice(0, 3)).toEqual([2, 2, 1]);
    expect(followed.filter((id) => id === 's1')).toHaveLength(1);
  });

  it('stops between batches, not after a backlog that keeps growing', async () => {
    // A backlog that never runs out: every claim finds a full batch (a busy journal, an
    // endpoint behind). A stop must end the round after the batch in hand.
    let claims = 0;
    const kind: OutboxKind<string, string> = {
      name: 'test',
      batchSize: 2,
      behind: async () => [],
      key: (sessionId) => sessionId,
      follow: async () => ({ changed: false, more: false }),
      claim: async () => {
        claims += 1;
        return ['a', 'b'];
      },
      send: () => new Promise<void>((resolve) => setTimeout(resolve, 1)),
      nextDueMs: async () => null,
    };
    const outbox = startOutboxLoop(kind, { wakeups, log, pollMs: never });
    await until(
      () => claims,
      (n) => n >= 3,
      'a few batches claimed',
    );
    await outbox.stop();
    const atStop = claims;
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(claims).toBe(atStop);
  });

  it('stops between follow-ups of a session that is always further behind', async () => {
    let follows = 0;
    const kind: OutboxKind<string, string> = {
      name: 'test',
      batchSize: 2,
      behind: async () => ['s1'],
      key: (sessionId) => sessionId,
      follow: async () => {
        follows += 1;
        await new Promise((resolve) => setTimeout(resolve, 1));
        return { changed: true, more: true };
      },
      claim: async () => [],
      send: async () => {},
      nextDueMs: async () => null,
    };
    const outbox = startOutboxLoop(kind, { wakeups, log, pollMs: never });
    await until(
      () => follows,
      (n) => n >= 3,
      'a few follow-ups',
    );
    await outbox.stop();
    const atStop = follows;
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(follows).toBe(atStop);
  });

  it('backs off exponentially with jitter, up to its cap', () => {
    expect(backoffMs(1000, 1, () => 1)).toBe(1000);
    expect(backoffMs(1000, 3, () => 0)).toBe(2000);
    expect(backoffMs(1000, 3, () => 1)).toBe(4000);
    expect(backoffMs(1000, 20, () => 1, 300_000)).toBe(300_000);
    expect(backoffMs(1000, 20, () => 0, 300_000)).toBe(150_000);
  });
});
