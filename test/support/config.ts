import { compileConfig } from '../../src/config/load.js';
import type { Config } from '../../src/config/types.js';
import { testSharedBuffersMb } from './embedded.js';

/**
 * A configuration tuned for tests: short leases and polls so that recovery paths run in
 * seconds, the demo model at a small delay. `overrides` is the config file's shape.
 */
export function testConfig(
  storage: { url: string | null; dataDir: string },
  overrides: Record<string, unknown> = {},
  env: Record<string, string> = {},
): Config {
  const { runtime, server, ...rest } = overrides as {
    runtime?: Record<string, unknown>;
    server?: Record<string, unknown>;
  };
  return compileConfig(
    {
      server: { host: '127.0.0.1', port: 0, ...server },
      storage: {
        url: storage.url,
        data_dir: storage.dataDir,
        embedded_shared_buffers_mb: testSharedBuffersMb,
      },
      runtime: {
        lease_ttl_ms: 3000,
        heartbeat_ms: 1000,
        poll_ms: 200,
        retry_base_ms: 10,
        shutdown_grace_ms: 2000,
        ...runtime,
      },
      ...rest,
    },
    { PARLEY_DEMO_DELAY_MS: '0', ...env },
    'test',
  );
}
