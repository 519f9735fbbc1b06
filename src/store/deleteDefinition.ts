import type { Db } from './db.js';
import type { DefinitionKind } from './definitions.js';
import { notifyWakeup } from './wakeups.js';

/**
 * DELETE on a tenant's definition: removes its customized row, which restores the shipped
 * one (or, for one created through the API, removes it). A restore is kept in
 * `definition_history` as a revision of the tenant's own (`restored`, by `updatedBy`: the
 * shipped definition it went back to), so the tenant's revisions show when it happened.
 * `none`: the tenant has no row of its own — `shipped` says whether there is a shipped
 * definition to speak of.
 */
export async function deleteDefinition(
  db: Db,
  input: { kind: DefinitionKind; tenant: string; name: string; updatedBy: string },
): Promise<'restored' | 'deleted' | { none: true; shipped: boolean }> {
  return db.transaction(async (tx) => {
    const deleted = await tx.query<{ shipped: boolean }>(
      `delete from definitions d where kind = $1 and tenant = $2 and name = $3 and tenant <> ''
       returning exists (select 1 from definitions s
                          where s.kind = $1 and s.tenant = '' and s.name = $3) as shipped`,
      [input.kind, input.tenant, input.name],
    );
    const row = deleted.rows[0];
    if (!row) {
      const shipped = await tx.query(
        `select 1 from definitions where kind = $1 and tenant = '' and name = $2`,
        [input.kind, input.name],
      );
      return { none: true, shipped: shipped.rowCount > 0 };
    }
    if (row.shipped) {
      await tx.query(
        `insert into definition_history (kind, tenant, name, revision, definition, content_hash,
                                         source, created_by)
         select kind, $2, name, nextval('definition_revisions'), definition, content_hash,
                'restored', $4
           from definitions where kind = $1 and tenant = '' and name = $3`,
        [input.kind, input.tenant, input.name, input.updatedBy],
      );
    }
    await notifyWakeup(tx, { kind: 'definitions', sessionId: '-', sequence: 0 });
    return row.shipped ? 'restored' : 'deleted';
  });
}
