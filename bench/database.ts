import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import pg from 'pg';

/**
 * The PostgreSQL a benchmark measures: PARLEY_BENCH_DATABASE_URL (an admin URL: a role that
 * may create databases), else whatever `bash scripts/ensure-postgres.sh` provides; the
 * reason when there is none.
 */
export function postgresAdminUrl(): { url: string } | { skipped: string } {
  if (process.env.PARLEY_BENCH_DATABASE_URL) return { url: process.env.PARLEY_BENCH_DATABASE_URL };
  try {
    const url = execFileSync('bash', ['scripts/ensure-postgres.sh'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    }).trim();
    if (!url) return { skipped: 'scripts/ensure-postgres.sh printed no URL' };
    return { url };
  } catch (error) {
    const status = (error as { status?: number }).status;
    return {
      skipped:
        status === 3
          ? 'no PostgreSQL on this machine (scripts/ensure-postgres.sh exited 3); set PARLEY_BENCH_DATABASE_URL'
          : `scripts/ensure-postgres.sh failed (exit ${status ?? '?'}); set PARLEY_BENCH_DATABASE_URL`,
    };
  }
}

export interface FreshDatabase {
  name: string;
  url: string;
  /** Drops the database, ending any session still on it. */
  drop(): Promise<void>;
}

/**
 * A new database `<prefix>_<random>` on the admin URL's server, with `settings` set on it
 * (`alter database … set`), and the URL that reaches it.
 */
export async function freshDatabase(
  adminUrl: string,
  prefix: string,
  settings: Record<string, string> = {},
): Promise<FreshDatabase> {
  const name = `${prefix}_${randomBytes(5).toString('hex')}`;
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`create database ${name}`);
    for (const [key, value] of Object.entries(settings)) {
      await client.query(`alter database ${name} set ${key} = ${value}`);
    }
  } finally {
    await client.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    async drop() {
      const dropper = new pg.Client({ connectionString: adminUrl });
      await dropper.connect();
      try {
        await dropper.query(`drop database if exists ${name} with (force)`);
      } finally {
        await dropper.end();
      }
    },
  };
}
