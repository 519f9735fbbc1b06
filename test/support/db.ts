import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { Db } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { openPglite } from '../../src/store/pglite.js';
import { openPostgres } from '../../src/store/postgres.js';
import { isEngineFree } from './legs.js';
import { testSharedBuffersMb } from './embedded.js';
import { copyPgliteInitdb, copyPgliteTemplate, postgresTemplateName } from './template.js';

export const engine: 'pglite' | 'postgres' =
  process.env.PARLEY_TEST_ENGINE === 'postgres' ? 'postgres' : 'pglite';

/** The server every PostgreSQL test database is created on (scripts/test-postgres.sh sets it). */
export function adminUrl(): string {
  const url = process.env.PARLEY_TEST_DATABASE_URL;
  if (!url)
    throw new Error('PARLEY_TEST_DATABASE_URL is not set: run the PostgreSQL leg through npm test');
  return url;
}

/**
 * A fresh storage location for one test: a new database on PostgreSQL, a new data
 * directory for PGlite, each a copy of the migrated template (template.ts) unless `empty`
 * (no schema at all: the migration tests; on PGlite a copy of an initdb'd directory). Never shared between tests, never mocked.
 */
export async function freshStorage(options: { empty?: boolean } = {}): Promise<{
  storage: { url: string | null; dataDir: string };
  drop: () => Promise<void>;
}> {
  // Inside Vitest, the test file asking (a script such as scripts/screenshots.ts has none).
  const testPath = process.env.VITEST
    ? ((await import('vitest')).expect.getState().testPath ?? '')
    : '';
  if (isEngineFree(testPath))
    throw new Error(
      `${testPath} opens a database: remove it from engineFreeFiles in test/support/legs.ts`,
    );
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-test-'));
  if (engine === 'pglite') {
    if (options.empty) copyPgliteInitdb(dataDir);
    else copyPgliteTemplate(dataDir);
    return {
      storage: { url: null, dataDir },
      drop: async () => rmSync(dataDir, { recursive: true, force: true }),
    };
  }
  const name = `parley_t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl() });
  await admin.connect();
  await admin.query(
    options.empty
      ? `create database ${name}`
      : `create database ${name} template ${postgresTemplateName()}`,
  );
  await admin.end();
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  return {
    storage: { url: url.toString(), dataDir },
    drop: async () => {
      rmSync(dataDir, { recursive: true, force: true });
      const client = new pg.Client({ connectionString: adminUrl() });
      await client.connect();
      try {
        // A background worker (autovacuum) on the database can make one attempt fail.
        for (let attempt = 1; ; attempt++) {
          try {
            await client.query(`drop database if exists ${name} with (force)`);
            break;
          } catch (error) {
            if (attempt >= 5) throw error;
            await new Promise((resolve) => setTimeout(resolve, 500));
          }
        }
      } finally {
        await client.end();
      }
    },
  };
}

/** Opens (and migrates) a fresh database directly, for store- and runtime-level tests. */
export async function openTestDb(): Promise<{ db: Db; close: () => Promise<void> }> {
  const fresh = await freshStorage();
  const db = fresh.storage.url
    ? await openPostgres(fresh.storage.url, 5)
    : await openPglite(fresh.storage.dataDir, { sharedBuffersMb: testSharedBuffersMb });
  await migrate(db);
  return {
    db,
    close: async () => {
      await db.close();
      await fresh.drop();
    },
  };
}

/**
 * Opens a fresh database migrated by every migration but `held`: the database as the
 * version before that migration left it (the migrations after it applied too, as an
 * upgrade that skipped it would). The test then writes rows of that time and calls
 * `migrate(db)`, which applies `held` alone.
 */
export async function openBeforeMigration(
  held: number,
): Promise<{ db: Db; close: () => Promise<void> }> {
  const fresh = await freshStorage({ empty: true });
  const db = fresh.storage.url
    ? await openPostgres(fresh.storage.url, 2)
    : await openPglite(fresh.storage.dataDir);
  await db.query(`create table parley_migrations (
    id integer primary key, name text not null, applied_at timestamptz not null default now())`);
  await db.query(`insert into parley_migrations (id, name) values ($1, 'held back')`, [held]);
  await migrate(db);
  await db.query('delete from parley_migrations where id = $1', [held]);
  return {
    db,
    close: async () => {
      await db.close();
      await fresh.drop();
    },
  };
}
