import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { compileConfig } from '../src/config/load.js';
import { openStore } from '../src/store/open.js';
import { copyPgliteTemplate } from './support/template.js';

// `storage.embedded_shared_buffers_mb` sizes PGlite's page cache for the process that
// opens the data directory, and leaves the directory's own postgresql.conf alone.

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function sharedBuffers(file: Record<string, unknown>, dataDir: string): Promise<string> {
  const config = compileConfig({ storage: { data_dir: dataDir, ...file } });
  const db = await openStore(config, { migrate: false });
  try {
    const { rows } = await db.query<{ value: string }>(
      "select current_setting('shared_buffers') as value",
    );
    return rows[0]?.value ?? '';
  } finally {
    await db.close();
  }
}

describe('the embedded engine’s page cache', () => {
  it('is 128 MB by default and what the key says otherwise; postgresql.conf is untouched', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-cache-'));
    dirs.push(dataDir);
    copyPgliteTemplate(dataDir);
    const conf = readFileSync(join(dataDir, 'postgresql.conf'), 'utf8');
    expect(await sharedBuffers({}, dataDir)).toBe('128MB');
    expect(await sharedBuffers({ embedded_shared_buffers_mb: 24 }, dataDir)).toBe('24MB');
    expect(await sharedBuffers({}, dataDir)).toBe('128MB');
    expect(readFileSync(join(dataDir, 'postgresql.conf'), 'utf8')).toBe(conf);
  });
});
