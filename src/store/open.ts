import type { Config } from '../config/types.js';
import type { Db } from './db.js';
import { migrate } from './migrate.js';
import { openPglite } from './pglite.js';
import { openPostgres } from './postgres.js';
import { parseHosts } from './postgresHosts.js';

/** Opens the configured engine: PostgreSQL when `storage.url` is set, else embedded PGlite. */
export async function openStore(config: Config, options: { migrate?: boolean } = {}): Promise<Db> {
  const db = config.storage.url
    ? await openPostgres(config.storage.url, config.storage.poolSize, config.database)
    : await openPglite(config.storage.dataDir, {
        sharedBuffersMb: config.storage.embeddedSharedBuffersMb,
        vacuumIntervalMs: config.storage.embeddedVacuumIntervalMs,
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
    // Host names and the database only: never the credentials.
    const hosts = parseHosts(config.storage.url);
    if (hosts.names[0] === '(unparsed)') return 'PostgreSQL';
    const database = new URL(hosts.urlFor(0)).pathname;
    const listed = hosts.names.join(',');
    return hosts.names.length > 1
      ? `PostgreSQL at ${listed}${database} (the host that accepts writes)`
      : `PostgreSQL at ${listed}${database}`;
  } catch {
    return 'PostgreSQL';
  }
}
