import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Db } from '../src/store/db.js';
import { openPglite } from '../src/store/pglite.js';
import { until } from './support/poll.js';
import { copyPgliteTemplate } from './support/template.js';

// PGlite has no autovacuum: the embedded engine vacuums itself (store/pglite.ts). A
// session row updated as turns update it (a new `updated_at` every time: never a HOT
// update) leaves a dead version and index entries each time (those of one second's
// activity deduplicated into one posting list); vacuumed, their space is used again, and
// what the sessions table holds stays bounded.

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const clean of cleanup.splice(0)) await clean();
});

async function open(vacuumIntervalMs: number): Promise<Db> {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-vacuum-'));
  copyPgliteTemplate(dataDir);
  const db = await openPglite(dataDir, { vacuumIntervalMs });
  cleanup.push(async () => {
    await db.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  await db.query(
    `insert into sessions (session_id, tenant, agent) values ('s_vacuum', 'acme', 'a')`,
  );
  return db;
}

async function vacuums(db: Db): Promise<number> {
  const found = await db.query<{ count: number }>(
    `select vacuum_count as count from pg_stat_user_tables where relname = 'sessions'`,
  );
  return Number(found.rows[0]?.count ?? 0);
}

async function sessionsBytes(db: Db): Promise<number> {
  const found = await db.query<{ bytes: number }>(
    `select pg_total_relation_size('sessions') as bytes`,
  );
  return Number(found.rows[0]?.bytes);
}

async function churn(db: Db, updates: number): Promise<void> {
  for (let i = 0; i < updates; i++) {
    await db.query(
      `update sessions set updated_at = clock_timestamp(), input_count = input_count + 1
        where session_id = 's_vacuum'`,
    );
  }
}

describe('the embedded engine vacuums', () => {
  it('keeps a session row updated turn after turn from growing its table', async () => {
    const vacuumed = await open(50);
    const never = await open(0);
    const empty = await sessionsBytes(never);
    for (let round = 0; round < 8; round++) {
      const before = await vacuums(vacuumed);
      await churn(vacuumed, 300);
      await churn(never, 300);
      await until(
        () => vacuums(vacuumed),
        (count) => count > before,
        'a vacuum after the round',
      );
    }
    expect(await vacuums(never)).toBe(0);
    const kept = (await sessionsBytes(vacuumed)) - empty;
    const grown = (await sessionsBytes(never)) - empty;
    expect(grown).toBeGreaterThan(100_000);
    // Measured: 40 KB kept against 115 KB grown (196 KB before sessions_by_activity was
    // keyed by the second).
    expect(kept).toBeLessThan(grown / 2);
    // 4,800 single-row updates on two embedded databases: about 30 s on a quiet machine,
    // twice that and more beside other work.
  }, 180_000);
});
