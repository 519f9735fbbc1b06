import type { Config } from '../config/types.js';
import type { Db } from './db.js';
import { migrate } from './migrate.js';
import { openPglite } from './pglite.js';
import { openPostgres } from './postgres.js';

/** Opens the configured engine: PostgreSQL when `storage.url` is set, else embedded PGlite. */
export async function openStore(config: Config, options: { migrate?: boolean } = {}): Promise<Db> {
  const db = config.storage.url
    ? await openPostgres(config.storage.url, config.storage.poolSize, config.database)
    : await openPglite(config.storage.dataDir, {
        sharedBuffersMb: config.storage.embeddedSharedBuffersMb,
      });
  if (options.migrate !== false) {
    try {
      await migrate(db);
    } catch (error) {
      await db.close();
      throw error;
    }
  }
  return db;
}

export function describeStore(config: Config): string {
  if (!config.storage.url) return `embedded PGlite in ${config.storage.dataDir}`;
  try {
    const url = new URL(config.storage.url);
    return `PostgreSQL at ${url.hostname}${url.port ? `:${url.port}` : ''}${url.pathname}`;
  } catch {
    return 'PostgreSQL';
  }
}
