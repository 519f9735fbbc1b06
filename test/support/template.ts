import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { listMigrations, migrate } from '../../src/store/migrate.js';
import type { Db } from '../../src/store/db.js';
import { openPglite } from '../../src/store/pglite.js';
import { openPostgres } from '../../src/store/postgres.js';
import { testSharedBuffersMb } from './embedded.js';

const pgliteVersion = (
  JSON.parse(
    readFileSync(
      join(
        dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite')),
        '../package.json',
      ),
      'utf8',
    ),
  ) as { version: string }
).version;

/**
 * A migrated, empty database to copy for every test: PGlite's initdb alone takes several
 * seconds of CPU, and the migrations more, on every test file. The template is named after
 * the migrations it holds, so a changed migration makes a new one. Made once per run by
 * the global setup; a test copies it (PGlite: the data directory; PostgreSQL: `create
 * database ... template`).
 */
export function templateKey(): string {
  const hash = createHash('sha256');
  for (const migration of listMigrations()) hash.update(migration.name).update(migration.sql);
  return hash.digest('hex').slice(0, 12);
}

export function pgliteTemplateDir(): string {
  return join(tmpdir(), `parley-template-${templateKey()}`);
}

export function postgresTemplateName(): string {
  return `parley_template_${templateKey()}`;
}

/**
 * A data directory PGlite's initdb has made, with no schema: what the migration tests
 * start from (an initdb costs ten times the migrations). Named after PGlite's version.
 */
export function pgliteInitdbDir(): string {
  return join(tmpdir(), `parley-initdb-${pgliteVersion}`);
}

export async function ensurePgliteTemplate(): Promise<void> {
  await ensurePgliteDir(pgliteInitdbDir(), async () => {});
  await ensurePgliteDir(
    pgliteTemplateDir(),
    async (db) => {
      await migrate(db);
    },
    pgliteInitdbDir(),
  );
}

/** Makes `dir` once (from a copy of `from`, else by initdb), atomically by a rename. */
async function ensurePgliteDir(
  dir: string,
  fill: (db: Db) => Promise<void>,
  from?: string,
): Promise<void> {
  if (existsSync(join(dir, 'PG_VERSION'))) return;
  const building = `${dir}.${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  if (from) cpSync(from, building, { recursive: true });
  else mkdirSync(building, { recursive: true });
  const db = await openPglite(building, { sharedBuffersMb: testSharedBuffersMb });
  await fill(db);
  await db.close();
  rmSync(join(building, 'parley.lock'), { force: true });
  try {
    renameSync(building, dir);
  } catch {
    // Another run made it meanwhile.
    rmSync(building, { recursive: true, force: true });
  }
}

/** Copies the template into an empty directory. */
export function copyPgliteTemplate(into: string): void {
  cpSync(pgliteTemplateDir(), into, { recursive: true });
}

/** Copies the initdb'd directory (no schema) into an empty directory. */
export function copyPgliteInitdb(into: string): void {
  cpSync(pgliteInitdbDir(), into, { recursive: true });
}

export async function ensurePostgresTemplate(adminUrl: string): Promise<void> {
  const name = postgresTemplateName();
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    const found = await admin.query('select 1 from pg_database where datname = $1', [name]);
    if (found.rowCount) return;
    const building = `${name}_${process.pid}`;
    await admin.query(`drop database if exists ${building}`);
    await admin.query(`create database ${building}`);
    const url = new URL(adminUrl);
    url.pathname = `/${building}`;
    const db = await openPostgres(url.toString(), 2);
    await migrate(db);
    await db.close();
    try {
      await admin.query(`alter database ${building} rename to ${name}`);
    } catch {
      await admin.query(`drop database if exists ${building}`);
    }
  } finally {
    await admin.end();
  }
}
