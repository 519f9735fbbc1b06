import type { Queryable } from './db.js';
import type { DefinitionKind } from './definitions.js';
import type { RevisionSource } from './readDefinitionRevision.js';

/** A kept revision as a listing shows it (without the definition itself). */
export interface RevisionEntry {
  revision: number;
  content_hash: string;
  source: RevisionSource;
  created_at: Date;
  created_by: string | null;
}

/**
 * The revisions of `name` a tenant has seen, newest first: the shipped ones and its own
 * (edited, restored), each a row of `definition_history`. Revisions come from one
 * sequence, so `before` (the last revision of the page before) pages without a gap.
 */
export async function listDefinitionRevisions(
  db: Queryable,
  input: {
    kind: DefinitionKind;
    tenant: string;
    name: string;
    before: number | null;
    limit: number;
  },
): Promise<{ items: RevisionEntry[]; more: boolean }> {
  const found = await db.query<RevisionEntry>(
    `select revision, content_hash, source, created_at, created_by
       from definition_history
      where kind = $1 and tenant in ($2, '') and name = $3
        and ($4::bigint is null or revision < $4::bigint)
      order by revision desc
      limit $5`,
    [input.kind, input.tenant, input.name, input.before, input.limit + 1],
  );
  return { items: found.rows.slice(0, input.limit), more: found.rows.length > input.limit };
}
