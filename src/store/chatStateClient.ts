import type pg from 'pg';
import type { Db } from './db.js';

/**
 * `@chat-adapter/state-pg` runs its own SQL through a `pg.Pool`'s `query(text, values)`
 * and reads only `rows`. This gives it Parley's database instead, whichever the engine:
 * the pool of PostgreSQL, or the embedded PGlite that no second client could open. Its
 * schema is Parley's migration 0040 (the adapter's `autoCreateSchema` stays off).
 */
export function chatStateClient(db: Db): pg.Pool {
  const client = {
    query: (text: string, values?: unknown[]) => db.query(text, values ?? []),
    // The adapter ends a pool only if it created it; Parley's is closed with the store.
    end: async () => {},
  };
  return client as unknown as pg.Pool;
}
