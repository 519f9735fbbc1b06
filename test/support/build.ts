import { execFileSync } from 'node:child_process';
import { ensurePgliteTemplate, ensurePostgresTemplate } from './template.js';

/**
 * Vitest global setup: tests that spawn the real `parley` command run the built one
 * (dist/), so build it once per run (tsc is incremental: a no-op build is quick), unless
 * `npm test` has just built it (PARLEY_TEST_BUILT=1); and the migrated template every test
 * database is copied from (template.ts).
 */
export default async function setup(): Promise<void> {
  if (process.env.PARLEY_TEST_BUILT !== '1') {
    execFileSync('npm', ['run', 'build', '--silent'], { stdio: 'inherit' });
  }
  if (process.env.PARLEY_TEST_ENGINE === 'postgres') {
    const url = process.env.PARLEY_TEST_DATABASE_URL;
    if (url) await ensurePostgresTemplate(url);
  } else {
    await ensurePgliteTemplate();
  }
}
