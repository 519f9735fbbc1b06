import { createHash } from 'node:crypto';
import { jsonbOrder } from './eventRows.js';

/**
 * Glossary (agents and missions at runtime):
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
