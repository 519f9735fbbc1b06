import type { Queryable } from './db.js';

export type UsageGroup = 'tenant' | 'agent' | 'model';

export interface UsageTotals {
  calls: number;
  input_tokens: number;
  output_tokens: number;
  cached_input_tokens: number;
  reasoning_tokens: number;
  cost_usd: number;
}

export interface UsageReport {
  items: (UsageTotals & { key: string })[];
  total: UsageTotals;
}

/** The column each grouping reads: a fixed list, never text from a request. */
const groupColumns: Record<UsageGroup, string> = {
  tenant: 'tenant',
  agent: 'agent',
  model: 'model',
};

const sums = `count(*)::bigint as calls,
       coalesce(sum(input_tokens), 0)::bigint as input_tokens,
       coalesce(sum(output_tokens), 0)::bigint as output_tokens,
       coalesce(sum(cached_input_tokens), 0)::bigint as cached_input_tokens,
       coalesce(sum(reasoning_tokens), 0)::bigint as reasoning_tokens,
       coalesce(sum(cost_usd), 0)::numeric as cost_usd`;

/** One tenant's usage in `[from, to)`, grouped, most expensive first. */
export async function usageReport(
  db: Queryable,
  tenant: string,
  options: { groupBy: UsageGroup; from: Date | null; to: Date | null },
): Promise<UsageReport> {
  const column = groupColumns[options.groupBy];
  const params = [tenant, options.from, options.to];
  const where = `where tenant = $1 and ($2::timestamptz is null or at >= $2)
                   and ($3::timestamptz is null or at < $3)`;
  const items = await db.query<UsageTotals & { key: string }>(
    `select ${column} as key, ${sums} from usage ${where}
      group by ${column} order by cost_usd desc, key`,
    params,
  );
  const total = await db.query<UsageTotals>(`select ${sums} from usage ${where}`, params);
  return { items: items.rows, total: total.rows[0] as UsageTotals };
}
