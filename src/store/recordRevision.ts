import type { Queryable } from './db.js';
import type { DefinitionRow } from './definitions.js';

/**
 * Keeps a tenant's definition row's revision loadable after later writes replace it: a
 * turn that started with it runs every later step with it, and its admin lists it
 * (`edited`, by whoever wrote it). Called in the transaction that wrote it.
 */
export async function recordRevision(tx: Queryable, row: DefinitionRow): Promise<void> {
  await tx.query(
    `insert into definition_history (kind, tenant, name, revision, definition, content_hash,
                                     source, created_by)
     values ($1, $2, $3, $4, $5, $6, 'edited', $7) on conflict do nothing`,
    [
      row.kind,
      row.tenant,
      row.name,
      row.revision,
      JSON.stringify(row.definition),
      row.content_hash,
      row.updated_by,
    ],
  );
}
