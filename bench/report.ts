import { execFileSync } from 'node:child_process';

/** Formatted as the repository's Prettier would (so `npm run lint` passes on the file). */
export async function formatJson(path: string, value: unknown): Promise<string> {
  const text = `${JSON.stringify(value, null, 2)}\n`;
  try {
    const prettier = await import('prettier');
    const options = (await prettier.resolveConfig(path)) ?? {};
    return await prettier.format(text, { ...options, parser: 'json' });
  } catch {
    return text;
  }
}

/** The commit measured, and whether src/ differed from it (PARLEY_BENCH_REVISION overrides). */
export function revision(root: string): { commit: string | null; src_modified: boolean | null } {
  if (process.env.PARLEY_BENCH_REVISION) {
    return { commit: process.env.PARLEY_BENCH_REVISION, src_modified: false };
  }
  try {
    const git = (...args: string[]) =>
      execFileSync('git', ['-C', root, ...args], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim();
    return {
      commit: git('rev-parse', 'HEAD'),
      src_modified: git('status', '--porcelain', '--', 'src').length > 0,
    };
  } catch {
    return { commit: null, src_modified: null };
  }
}
