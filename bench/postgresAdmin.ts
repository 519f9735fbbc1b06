import { execFileSync } from 'node:child_process';

/**
 * The PostgreSQL server a benchmark creates its fresh databases on: an admin URL (a role
 * that may create databases) from PARLEY_BENCH_DATABASE_URL, else the one
 * `bash scripts/ensure-postgres.sh` prints (it starts the machine's server if it can).
 * Without either, the PostgreSQL part is skipped, and the reason says why.
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
