import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { pruneEvents } from '../src/store/pruneEvents.js';
import type { Db } from '../src/store/db.js';
import { freshStorage } from './support/db.js';
import { openPostgres } from '../src/store/postgres.js';
import { migrate } from '../src/store/migrate.js';
import { admit, journal } from './support/runtime-helpers.js';

/** Issue 6, item 12: one pruner at a time across processes (PostgreSQL's advisory lock). */

let db: Db;
let url: string;
let drop: () => Promise<void>;

beforeAll(async () => {
  const fresh = await freshStorage();
  url = fresh.storage.url as string;
  drop = fresh.drop;
  db = await openPostgres(url, 4);
  await migrate(db);
});
afterAll(async () => {
  await db.close();
  await drop();
});

describe('pruneEvents across processes', () => {
  it('skips while another pruner holds the lock, and prunes once it is free', async () => {
    const admitted = await admit(db, { turnId: 'lock_1', message: 'old' });
    await db.query(`update events set at = now() - interval '2 days'`);
    await db.query(`update sessions set journal_since = now() - interval '2 days'`);
    // Another process's pruner, mid-batch: it holds the pruning lock in its transaction.
    const other = new pg.Client({ connectionString: url });
    await other.connect();
    await other.query('begin');
    await other.query('select pg_advisory_xact_lock(7301978)');
    const skipped = await pruneEvents(db, { olderThan: new Date(Date.now() - 86_400_000) });
    expect(skipped).toEqual({ sessions: 0, events: 0, skipped: true });
    expect(await journal(db, admitted.session_id)).toHaveLength(1);
    await other.query('commit');
    await other.end();
    const pruned = await pruneEvents(db, { olderThan: new Date(Date.now() - 86_400_000) });
    expect(pruned).toEqual({ sessions: 1, events: 1, skipped: false });
  });
});
