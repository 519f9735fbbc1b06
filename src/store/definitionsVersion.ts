import type { Queryable } from './db.js';

/** A cheap fingerprint of the table: any write raises max(revision) or changes the count. */
export async function definitionsVersion(db: Queryable): Promise<string> {
  const found = await db.query<{ version: string }>({
    name: 'definitions_version',
    text: `select count(*)::text || ':' || coalesce(max(revision), 0)::text as version
             from definitions`,
  });
  return found.rows[0]?.version ?? '0:0';
}
