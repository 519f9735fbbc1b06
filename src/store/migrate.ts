import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Db, Queryable } from './db.js';

const migrationsDir = join(dirname(fileURLToPath(import.meta.url)), 'migrations');

/** Any fixed number: every Parley process that migrates takes the same advisory lock. */
const migrationLock = 7_301_977;

export interface Migration {
  id: number;
  name: string;
  sql: string;
}

export function listMigrations(): Migration[] {
  return readdirSync(migrationsDir)
    .filter((file) => /^\d{4}_.+\.sql$/.test(file))
    .sort()
    .map((file) => ({
      id: Number(file.slice(0, 4)),
      name: file,
      sql: readFileSync(join(migrationsDir, file), 'utf8'),
    }));
}

/**
 * Applies the numbered `.sql` migrations not yet recorded, each in its own transaction.
 * The advisory lock must come first so that two processes starting at once (several
 * `parley api` replicas) apply each migration exactly once: the second waits, then sees
 * it recorded. Returns the names it applied.
 */
export async function migrate(db: Db): Promise<string[]> {
  // Even `create table if not exists` races between processes: take the lock first.
  await db.transaction(async (tx) => {
    await withoutStatementTimeout(tx);
    await tx.query('select pg_advisory_xact_lock($1)', [migrationLock]);
    await tx.query(`
      create table if not exists parley_migrations (
        id integer primary key,
        name text not null,
        applied_at timestamptz not null default now()
      )`);
  });
  const applied: string[] = [];
  for (const migration of listMigrations()) {
    const done = await db.transaction(async (tx) => {
      await withoutStatementTimeout(tx);
      await tx.query('select pg_advisory_xact_lock($1)', [migrationLock]);
      const seen = await tx.query('select 1 from parley_migrations where id = $1', [migration.id]);
      if (seen.rowCount > 0) return false;
      for (const statement of splitStatements(migration.sql)) await tx.query(statement);
      await tx.query('insert into parley_migrations (id, name) values ($1, $2)', [
        migration.id,
        migration.name,
      ]);
      return true;
    });
    if (done) applied.push(migration.name);
  }
  return applied;
}

/**
 * A migration may rebuild a large table, and a second process waits on the lock for as
 * long as the first one migrates: neither is bounded by `database.statement_timeout_ms`.
 */
async function withoutStatementTimeout(tx: Queryable): Promise<void> {
  await tx.query('set local statement_timeout = 0');
}

/** True when every migration this build ships is recorded: what /readyz checks. */
export async function migrationsApplied(db: Db): Promise<boolean> {
  try {
    const result = await db.query<{ id: number }>('select id from parley_migrations');
    const recorded = new Set(result.rows.map((row) => row.id));
    return listMigrations().every((migration) => recorded.has(migration.id));
  } catch {
    return false;
  }
}

/** Migrations are plain statements separated by `;` at line ends (no functions bodies). */
function splitStatements(sql: string): string[] {
  return sql
    .split(/;\s*$/m)
    .map((statement) =>
      statement
        .split('\n')
        .filter((line) => !line.trim().startsWith('--'))
        .join('\n')
        .trim(),
    )
    .filter((statement) => statement.length > 0);
}
