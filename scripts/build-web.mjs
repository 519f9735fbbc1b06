// Builds a browser app with Vite, type-checked first: `web` (the default) into dist/web,
// served by Parley itself, with a gzipped twin of every text file (sent to browsers that
// accept gzip); `example` is examples/use-chat into its own dist/. Skipped when the output
// is newer than every source it is built from, so the test suite's build stays quick;
// PARLEY_WEB_BUILD=force rebuilds anyway.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

const targets = {
  web: { dir: 'web', out: 'dist/web', sources: ['web', 'src/client'], gzip: true },
  example: {
    dir: 'examples/use-chat',
    out: 'examples/use-chat/dist',
    sources: ['examples/use-chat/src', 'examples/use-chat/index.html', 'src/client', 'src/ai-sdk'],
    gzip: false,
  },
};
const target = targets[process.argv[2] ?? 'web'];
if (!target) throw new Error(`unknown target ${process.argv[2]}: web or example`);
const stamp = join(target.out, '.built');

function newest(path) {
  if (!existsSync(path)) return 0;
  const info = statSync(path);
  if (!info.isDirectory()) return info.mtimeMs;
  let latest = info.mtimeMs;
  for (const entry of readdirSync(path)) {
    if (entry === 'dist' || entry === 'node_modules') continue;
    latest = Math.max(latest, newest(join(path, entry)));
  }
  return latest;
}

const sources = [
  ...target.sources,
  `${target.dir}/vite.config.ts`,
  'scripts/build-web.mjs',
  'package-lock.json',
];
const upToDate =
  process.env.PARLEY_WEB_BUILD !== 'force' &&
  existsSync(stamp) &&
  statSync(stamp).mtimeMs > Math.max(...sources.map(newest));
if (!upToDate) {
  execFileSync('npx', ['tsc', '-p', `${target.dir}/tsconfig.json`], { stdio: 'inherit' });
  execFileSync(
    'npx',
    ['vite', 'build', '--config', `${target.dir}/vite.config.ts`, '--logLevel', 'warn'],
    // Run from the test suite, NODE_ENV is `test`: Vite would then bundle React's
    // development build. The app is always built for production.
    { stdio: 'inherit', env: { ...process.env, NODE_ENV: 'production' } },
  );
  const gzipTwins = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const file = join(dir, entry.name);
      if (entry.isDirectory()) gzipTwins(file);
      else if (/\.(html|js|css|svg|json)$/.test(entry.name)) {
        writeFileSync(`${file}.gz`, gzipSync(readFileSync(file), { level: 9 }));
      }
    }
  };
  if (target.gzip) gzipTwins(target.out);
  writeFileSync(stamp, new Date().toISOString());
}
