import type { Queryable } from './db.js';

/**
 * Deletes one memory of the tenant; with `user` set, only if it is that user's. Returns
 * whether a memory was deleted (false: none, or someone else's — the caller answers 404
 * either way, so existence does not leak).
 */
export async function deleteMemory(
  db: Queryable,
  tenant: string,
  memoryId: string,
  user: string | null,
): Promise<boolean> {
  const deleted = await db.query(
    `delete from memories
      where memory_id = $1 and tenant = $2 and ($3::text is null or user_id = $3)`,
    [memoryId, tenant, user],
  );
  return deleted.rowCount > 0;
}
