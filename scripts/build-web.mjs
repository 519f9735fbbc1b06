// Builds the web app into dist/web (type-checked first) and writes a gzipped twin of
// every text file, which the server sends to browsers that accept gzip. Skipped when
// dist/web is newer than every source it is built from, so the test suite's build stays
// quick; PARLEY_WEB_BUILD=force rebuilds anyway.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

const out = 'dist/web';
const stamp = join(out, '.built');
const sources = ['web', 'src/client', 'package-lock.json'];

function newest(path) {
  const info = statSync(path);
  if (!info.isDirectory()) return info.mtimeMs;
  let latest = info.mtimeMs;
  for (const entry of readdirSync(path)) latest = Math.max(latest, newest(join(path, entry)));
  return latest;
}

const upToDate =
  process.env.PARLEY_WEB_BUILD !== 'force' &&
  existsSync(stamp) &&
  statSync(stamp).mtimeMs > Math.max(...sources.map(newest));
if (!upToDate) {
  execFileSync('npx', ['tsc', '-p', 'web/tsconfig.json'], { stdio: 'inherit' });
  execFileSync('npx', ['vite', 'build', '--config', 'web/vite.config.ts', '--logLevel', 'warn'], {
    stdio: 'inherit',
  });
  const gzipTwins = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const file = join(dir, entry.name);
      if (entry.isDirectory()) gzipTwins(file);
      else if (/\.(html|js|css|svg|json)$/.test(entry.name)) {
        writeFileSync(`${file}.gz`, gzipSync(readFileSync(file), { level: 9 }));
      }
    }
  };
  gzipTwins(out);
  writeFileSync(stamp, new Date().toISOString());
}
