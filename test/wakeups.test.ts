import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Db, Queryable, Statement } from '../src/store/db.js';
import { publishWakeup, Wakeups, type Wakeup } from '../src/store/wakeups.js';
import { openTestDb } from './support/db.js';
import { until } from './support/poll.js';

describe('wake-ups published after commit', () => {
  let db: Db;
  let close: () => Promise<void>;
  let wakeups: Wakeups;
  const received: Wakeup[] = [];

  beforeEach(async () => {
    ({ db, close } = await openTestDb());
    wakeups = new Wakeups(db);
    await wakeups.start();
    received.length = 0;
    wakeups.subscribe((wakeup) => received.push(wakeup));
  });

  afterEach(async () => {
    await wakeups.stop();
    await close();
  });

  /** The test database, counting the statements sent through it. */
  function counted(): { via: Queryable; sent: string[] } {
    const sent: string[] = [];
    const via: Queryable = {
      query: (statement: string | Statement, params?: unknown[]) => {
        sent.push(typeof statement === 'string' ? statement : statement.name);
        return db.query(statement, params);
      },
    };
    return { via, sent };
  }

  it('sends the wake-ups of one event-loop turn in one statement, in order', async () => {
    const { via, sent } = counted();
    publishWakeup(via, 'events:s1:1:0');
    publishWakeup(via, 'events:s1:2:0');
    publishWakeup(via, 'input:s2:1:0');
    publishWakeup(via, null);
    await until(
      () => received.length,
      (n) => n >= 3,
      'three wake-ups',
    );
    expect(received.map((w) => `${w.kind}:${w.sessionId}:${w.sequence}`)).toEqual([
      'events:s1:1',
      'events:s1:2',
      'input:s2:1',
    ]);
    expect(sent).toEqual(['publish_wakeups']);
  });

  it('sends what was published during a send after it, one statement at a time', async () => {
    const { via, sent } = counted();
    publishWakeup(via, 'events:s1:1:0');
    await new Promise((resolve) => setImmediate(resolve));
    // The first send is in flight: these wait for it and leave together.
    publishWakeup(via, 'events:s1:2:0');
    publishWakeup(via, 'events:s1:3:0');
    await until(
      () => received.length,
      (n) => n >= 3,
      'three wake-ups',
    );
    expect(received.map((w) => w.sequence)).toEqual([1, 2, 3]);
    expect(sent).toEqual(['publish_wakeups', 'publish_wakeups']);
  });
});
