import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newEvent } from '../src/protocol/events.js';
import { journalEvents } from '../src/store/appendEvents.js';
import type { Db } from '../src/store/db.js';
import { openPostgres } from '../src/store/postgres.js';
import { readUserFeed } from '../src/store/userFeed.js';
import { migrate } from '../src/store/migrate.js';
import { freshStorage } from './support/db.js';
import { admit } from './support/runtime-helpers.js';

// The user stream reads the journal by time (`events.at`, its transaction's start). A
// transaction still open when a read happens — a worker paused in it — commits events
// older than that read: the read's time must not pass its start, or the next read (from
// that time less the overlap) would never see them.

let db: Db;
let other: Db;
let drop: () => Promise<void>;
const viewer = { user: 'local', roles: ['admin'], admin: true, approverOf: [] };

beforeAll(async () => {
  const fresh = await freshStorage();
  drop = fresh.drop;
  db = await openPostgres(fresh.storage.url as string, 3);
  other = await openPostgres(fresh.storage.url as string, 2);
  await migrate(db);
});
afterAll(async () => {
  await other?.close();
  await db?.close();
  await drop?.();
});

describe('the user feed and a transaction still open', () => {
  it('reads no later than its start, so its events are read once it commits', async () => {
    const { session_id: sessionId } = await admit(db, { turnId: 'feed_open_1', message: 'hi' });
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    let began = 0;
    const writing = other.transaction(async (tx) => {
      const started = await tx.query<{ now: Date }>('select now() as now');
      began = (started.rows[0] as { now: Date }).now.getTime();
      await journalEvents(tx, sessionId, [
        newEvent('execution_status', null, {
          execution_id: 'exe_open',
          mission: 'report',
          status: 'running',
          loop_status: null,
          iteration: 0,
          max_iterations: 1,
          next_run_at: null,
          loop_decision: null,
        }),
      ]);
      await held;
    });
    while (began === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    await new Promise((resolve) => setTimeout(resolve, 200));

    const before = await readUserFeed(db, 'default', viewer, new Date(began - 60_000), 100);
    expect(before.items.filter((item) => item.event.type === 'execution_status')).toEqual([]);
    expect(before.readAt.getTime()).toBeLessThanOrEqual(began);

    release();
    await writing;
    const after = await readUserFeed(db, 'default', viewer, before.readAt, 100);
    expect(after.items.map((item) => item.event.type)).toContain('execution_status');
  });
});
