import type { Db } from './db.js';

/** One model as a catalog sync found it, capabilities already merged (catalog/capabilities.ts). */
export interface ModelEntry {
  modelId: string;
  displayName: string | null;
  tools: boolean | null;
  vision: boolean | null;
  reasoning: boolean | null;
  contextWindow: number | null;
  maxOutputTokens: number | null;
  source: 'listing' | 'config';
}

export interface ModelsSynced {
  added: string[];
  removed: string[];
  /** Active models of the provider after the sync. */
  active: number;
}

/**
 * Records one provider's listing in one transaction: every model seen is upserted as
 * active (a removed one that reappears comes back, keeping its first_seen_at); every
 * active model of the provider not seen this time is marked removed, never deleted.
 */
export async function syncModels(
  db: Db,
  provider: { name: string; kind: string },
  entries: ModelEntry[],
): Promise<ModelsSynced> {
  return db.transaction(async (tx) => {
    const added: string[] = [];
    for (const entry of entries) {
      const upserted = await tx.query<{ inserted: boolean }>(
        `insert into models (provider, model_id, kind, display_name, tools, vision, reasoning,
                             context_window, max_output_tokens, source)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
         on conflict (provider, model_id) do update
            set kind = excluded.kind, display_name = excluded.display_name,
                tools = excluded.tools, vision = excluded.vision, reasoning = excluded.reasoning,
                context_window = excluded.context_window,
                max_output_tokens = excluded.max_output_tokens, source = excluded.source,
                status = 'active', last_seen_at = now(), removed_at = null
         returning (xmax = 0) as inserted`,
        [
          provider.name,
          entry.modelId,
          provider.kind,
          entry.displayName,
          entry.tools,
          entry.vision,
          entry.reasoning,
          entry.contextWindow,
          entry.maxOutputTokens,
          entry.source,
        ],
      );
      if (upserted.rows[0]?.inserted) added.push(entry.modelId);
    }
    const removed = await tx.query<{ model_id: string }>(
      `update models set status = 'removed', removed_at = now()
        where provider = $1 and status = 'active' and not (model_id = any($2::text[]))
        returning model_id`,
      [provider.name, entries.map((entry) => entry.modelId)],
    );
    const active = await tx.query<{ count: number }>(
      `select count(*)::int as count from models where provider = $1 and status = 'active'`,
      [provider.name],
    );
    return {
      added,
      removed: removed.rows.map((row) => row.model_id).sort(),
      active: active.rows[0]?.count ?? 0,
    };
  });
}
