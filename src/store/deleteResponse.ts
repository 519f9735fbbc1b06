import type { Queryable } from './db.js';

/**
 * Marks a turn's response deleted (the OpenAI-compatible API's `DELETE /responses/{id}`):
 * its id answers as missing from then on, while the turn stays in its session. False when
 * there is no such turn of the tenant, or it was deleted already.
 */
export async function deleteResponse(
  db: Queryable,
  tenant: string,
  turnId: string,
): Promise<boolean> {
  const found = await db.query(
    `update turns set response_deleted_at = now()
      where tenant = $1 and turn_id = $2 and response_deleted_at is null`,
    [tenant, turnId],
  );
  return (found.rowCount ?? 0) > 0;
}
