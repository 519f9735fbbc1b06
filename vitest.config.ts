import { defineConfig } from 'vitest/config';
import { engineFreeFiles, surfaceFiles } from './test/support/legs.js';

// The suite runs once per engine (PARLEY_TEST_ENGINE=pglite|postgres, see package.json).
// Files named *.pglite.test.ts or *.postgres.test.ts need that engine's process model
// (one embedded process, or several processes on one PostgreSQL) and run only in its leg.
// Files that never open a database, and the surfaces over the store (test/support/legs.ts),
// run only in the PGlite leg.
const engine = process.env.PARLEY_TEST_ENGINE === 'postgres' ? 'postgres' : 'pglite';
const other = engine === 'postgres' ? 'pglite' : 'postgres';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: [
      `test/**/*.${other}.test.ts`,
      '**/node_modules/**',
      ...(engine === 'postgres' ? [...engineFreeFiles, ...surfaceFiles] : []),
    ],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // A worker process runs file after file with its module cache kept: importing the
    // project's modules again for every file cost a quarter of the suite's CPU. Each file
    // still gets fresh databases and servers (test/support), and none mocks a module.
    isolate: false,
    // The PGlite leg waits more than it computes (browsers, demo models writing word by
    // word, killed and restarted servers): a third worker shortens it by about a tenth on
    // two cores. The PostgreSQL leg shares the cores with its server: two.
    maxWorkers: engine === 'pglite' ? 3 : 2,
    reporters: ['default'],
    globalSetup: ['test/support/build.ts'],
    // Spawned `parley` processes inherit it: PGlite's page cache at 16 MiB opens 3x faster.
    env: { PARLEY_TEST_ENGINE: engine, PARLEY_EMBEDDED_SHARED_BUFFERS_MB: '16' },
  },
});
