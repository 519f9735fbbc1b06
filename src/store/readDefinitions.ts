import type { Queryable } from './db.js';
import type { DefinitionRow } from './definitions.js';

/** Every definition row (shipped and customized): the directories' whole state. */
export async function readDefinitions(db: Queryable): Promise<DefinitionRow[]> {
  const found = await db.query<DefinitionRow>(
    'select * from definitions order by kind, tenant, name',
  );
  return found.rows;
}
