import type { Db } from './db.js';
import { contentHash, type DefinitionKind, type DefinitionRow } from './definitions.js';
import { recordRevision } from './recordRevision.js';
import { notifyWakeup } from './wakeups.js';

/**
 * A tenant's own definition (PUT /api/v1/agents/{name}, /missions/{name}, admin): written
 * as a customized row, which a changed configuration no longer overwrites. It records the
 * shipped hash it replaces (null when there is no shipped one: created through the API),
 * and wakes every process's directory so workers use it from their next turn. The revision
 * is kept in `definition_history`, so turns that started with the one it replaces keep it.
 */
export async function putDefinition(
  db: Db,
  input: {
    kind: DefinitionKind;
    tenant: string;
    name: string;
    namespace: string;
    definition: Record<string, unknown>;
    updatedBy: string;
  },
): Promise<DefinitionRow> {
  return db.transaction(async (tx) => {
    const written = await tx.query<DefinitionRow>(
      `insert into definitions (kind, tenant, name, namespace, definition, content_hash,
                                shipped_content_hash, is_customized, updated_by)
       values ($1, $2, $3, $4, $5, $6,
               (select content_hash from definitions
                 where kind = $1 and tenant = '' and name = $3), true, $7)
       on conflict (kind, tenant, name) do update
          set namespace = excluded.namespace, definition = excluded.definition,
              content_hash = excluded.content_hash,
              shipped_content_hash = excluded.shipped_content_hash,
              revision = nextval('definition_revisions'), updated_by = excluded.updated_by,
              updated_at = now()
       returning *`,
      [
        input.kind,
        input.tenant,
        input.name,
        input.namespace,
        JSON.stringify(input.definition),
        contentHash(input.definition),
        input.updatedBy,
      ],
    );
    const row = written.rows[0] as DefinitionRow;
    await recordRevision(tx, row);
    await notifyWakeup(tx, { kind: 'definitions', sessionId: '-', sequence: 0 });
    return row;
  });
}
