import { createHash } from 'node:crypto';
import type { Queryable } from './db.js';
import { jsonbOrder } from './eventRows.js';

/**
 * Glossary (issue 10, agents and missions at runtime):
 * - definition: an agent's or a mission's settings, in the configuration file's shape.
 * - shipped: the definition the configuration gives (tenant '' in `definitions`), seeded at
 *   every start; every tenant sees it unless it has its own.
 * - customized: a tenant's own definition (edited from the shipped one, or created through
 *   the API); a changed configuration no longer touches it; deleting it restores the
 *   shipped one.
 */
export type DefinitionKind = 'agent' | 'mission';

export interface DefinitionRow {
  kind: DefinitionKind;
  tenant: string;
  name: string;
  namespace: string;
  definition: Record<string, unknown>;
  content_hash: string;
  shipped_content_hash: string | null;
  is_customized: boolean;
  revision: number;
  updated_by: string | null;
  updated_at: Date;
}

/** sha256 of a definition's canonical JSON (keys ordered as jsonb orders them). */
export function contentHash(definition: unknown): string {
  return createHash('sha256')
    .update(JSON.stringify(jsonbOrder(definition)))
    .digest('hex');
}

/** Every definition row (shipped and customized): the directories' whole state. */
export async function readDefinitions(db: Queryable): Promise<DefinitionRow[]> {
  const found = await db.query<DefinitionRow>(
    'select * from definitions order by kind, tenant, name',
  );
  return found.rows;
}

/** A cheap fingerprint of the table: any write raises max(revision) or changes the count. */
export async function definitionsVersion(db: Queryable): Promise<string> {
  const found = await db.query<{ version: string }>({
    name: 'definitions_version',
    text: `select count(*)::text || ':' || coalesce(max(revision), 0)::text as version
             from definitions`,
  });
  return found.rows[0]?.version ?? '0:0';
}
