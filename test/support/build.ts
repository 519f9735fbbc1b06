import { execFileSync } from 'node:child_process';

/**
 * Vitest global setup: tests that spawn the real `parley` command run the built one
 * (dist/), so build it once per run. tsc is incremental: a no-op build is quick.
 */
export default function setup(): void {
  execFileSync('npm', ['run', 'build', '--silent'], { stdio: 'inherit' });
}
