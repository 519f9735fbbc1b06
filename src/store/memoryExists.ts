import type { Queryable } from './db.js';
import type { MemoryOwner } from './applyMemoryEffects.js';

/** Whether the owner has this committed memory (what `forget` may name). */
export async function memoryExists(
  db: Queryable,
  owner: MemoryOwner,
  memoryId: string,
): Promise<boolean> {
  const found = await db.query(
    `select 1 from memories
      where memory_id = $1 and tenant = $2 and agent = $3 and user_id = $4`,
    [memoryId, owner.tenant, owner.agent, owner.user],
  );
  return found.rowCount > 0;
}
