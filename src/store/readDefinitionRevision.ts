import type { Queryable } from './db.js';
import type { DefinitionKind } from './definitions.js';

/** How a kept revision came to be (definition_history.source). */
export type RevisionSource = 'shipped' | 'edited' | 'restored';

/** One revision of a definition a tenant saw: its own row's, or the shipped row's. */
export interface DefinitionRevision {
  kind: DefinitionKind;
  /** '' for a shipped definition. */
  tenant: string;
  name: string;
  revision: number;
  definition: Record<string, unknown>;
  content_hash: string;
  source: RevisionSource;
  created_at: Date;
  /** Who wrote it (null: the configuration). */
  created_by: string | null;
}

/**
 * The definition `name` had at `revision`, as `tenant` saw it (its own or the shipped
 * one), or null when no such revision was kept.
 */
export async function readDefinitionRevision(
  db: Queryable,
  input: { kind: DefinitionKind; tenant: string; name: string; revision: number },
): Promise<DefinitionRevision | null> {
  const found = await db.query<DefinitionRevision>(
    `select kind, tenant, name, revision, definition, content_hash, source, created_at,
            created_by
       from definition_history
      where kind = $1 and tenant in ($2, '') and name = $3 and revision = $4
      order by tenant desc limit 1`,
    [input.kind, input.tenant, input.name, input.revision],
  );
  return found.rows[0] ?? null;
}
