import type { Queryable } from './db.js';
import type { DefinitionKind } from './definitions.js';

/** The revision of the definition `name` a tenant sees now (its own, else the shipped one). */
export async function currentDefinitionRevision(
  db: Queryable,
  input: { kind: DefinitionKind; tenant: string; name: string },
): Promise<number | null> {
  const found = await db.query<{ revision: number }>(
    `select revision from definitions
      where kind = $1 and tenant in ($2, '') and name = $3
      order by tenant desc limit 1`,
    [input.kind, input.tenant, input.name],
  );
  return found.rows[0]?.revision ?? null;
}
