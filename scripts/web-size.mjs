// Prints the built web app's size, raw and gzipped (what a browser downloads on its first
// visit), per file and in total. Run `npm run build` first; docs/web.md quotes the total.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { gzipSync } from 'node:zlib';

const root = 'dist/web';
const rows = [];
const walk = (dir) => {
  for (const entry of readdirSync(dir)) {
    const file = join(dir, entry);
    if (statSync(file).isDirectory()) walk(file);
    else if (/\.(html|js|css|svg)$/.test(entry)) {
      const bytes = readFileSync(file);
      rows.push({
        file: relative(root, file),
        raw: bytes.length,
        gzip: gzipSync(bytes, { level: 9 }).length,
      });
    }
  }
};
walk(root);
const kib = (bytes) => `${(bytes / 1024).toFixed(1)} KiB`;
for (const row of rows.sort((a, b) => b.gzip - a.gzip)) {
  console.log(
    `${row.file.padEnd(36)} ${kib(row.raw).padStart(11)} ${kib(row.gzip).padStart(11)} gzipped`,
  );
}
const total = rows.reduce((sum, row) => ({ raw: sum.raw + row.raw, gzip: sum.gzip + row.gzip }), {
  raw: 0,
  gzip: 0,
});
console.log(
  `${'total'.padEnd(36)} ${kib(total.raw).padStart(11)} ${kib(total.gzip).padStart(11)} gzipped`,
);
