import type { Queryable } from './db.js';

export interface CatalogModel {
  provider: string;
  model_id: string;
  kind: string;
  display_name: string | null;
  tools: boolean | null;
  vision: boolean | null;
  reasoning: boolean | null;
  context_window: number | null;
  max_output_tokens: number | null;
  source: 'listing' | 'config';
  status: 'active' | 'removed';
  first_seen_at: Date;
  last_seen_at: Date;
  removed_at: Date | null;
  /** Its provider's circuit as last reported (`closed` when none was). */
  circuit: 'closed' | 'open' | 'half_open';
}

/** The catalog, by provider then model id; removed models only when asked for. */
export async function listModels(
  db: Queryable,
  options: { provider?: string | null; includeRemoved?: boolean } = {},
): Promise<CatalogModel[]> {
  const found = await db.query<CatalogModel>(
    `select m.*, coalesce(c.state, 'closed') as circuit
       from models m left join provider_circuits c on c.provider = m.provider
      where ($1::text is null or m.provider = $1)
        and ($2::boolean or m.status = 'active')
      order by m.provider, m.model_id`,
    [options.provider ?? null, options.includeRemoved ?? false],
  );
  return found.rows;
}
