import type { Db } from './db.js';
import { contentHash, type DefinitionKind } from './definitions.js';
import { notifyWakeup } from './wakeups.js';

/**
 * Makes the shipped definitions of one kind what the configuration says, at start: a new or
 * changed one is written (its content hash moves), an unchanged one is left alone, one the
 * configuration no longer has is deleted (its revisions stay in `definition_history`, for the
 * turns that started with them). Tenants' customized rows are never touched: that
 * is what customizing means. Every process seeds the same way.
 */
export async function seedDefinitions(
  db: Db,
  kind: DefinitionKind,
  shipped: { name: string; namespace: string; definition: Record<string, unknown> }[],
): Promise<void> {
  await db.transaction(async (tx) => {
    let changed = 0;
    for (const entry of shipped) {
      const hash = contentHash(entry.definition);
      const written = await tx.query(
        `with written as (
         insert into definitions (kind, tenant, name, namespace, definition, content_hash,
                                  shipped_content_hash, is_customized)
         values ($1, '', $2, $3, $4, $5, $5, false)
         on conflict (kind, tenant, name) do update
            set namespace = excluded.namespace, definition = excluded.definition,
                content_hash = excluded.content_hash,
                shipped_content_hash = excluded.shipped_content_hash,
                revision = nextval('definition_revisions'), updated_at = now()
          where definitions.content_hash <> excluded.content_hash
         returning kind, tenant, name, revision, definition, content_hash)
         insert into definition_history (kind, tenant, name, revision, definition, content_hash,
                                         source)
         select kind, tenant, name, revision, definition, content_hash, 'shipped' from written`,
        [kind, entry.name, entry.namespace, JSON.stringify(entry.definition), hash],
      );
      changed += written.rowCount;
    }
    const removed = await tx.query(
      `delete from definitions where kind = $1 and tenant = '' and not (name = any($2::text[]))`,
      [kind, shipped.map((entry) => entry.name)],
    );
    if (changed + removed.rowCount > 0) {
      await notifyWakeup(tx, { kind: 'definitions', sessionId: '-', sequence: 0 });
    }
  });
}
