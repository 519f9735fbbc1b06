import type { Queryable } from './db.js';

export type UsageGroup = 'tenant' | 'agent' | 'model' | 'user' | 'day';

export interface UsageTotals {
  calls: number;
  input_tokens: number;
  output_tokens: number;
  cached_input_tokens: number;
  reasoning_tokens: number;
  cost_usd: number;
}

export interface UsageReport {
  /** `key` is null for the calls whose user is not known (`group_by=user`). */
  items: (UsageTotals & { key: string | null })[];
  total: UsageTotals;
}

/**
 * What each grouping groups by, and in which order its items come: a fixed list, never
 * text from a request. `user`: the user the call was for (migration 0082: the author of
 * the turn it answered, else the session's owner); `day`: the UTC date of the call, oldest
 * first.
 */
const groupings: Record<UsageGroup, { key: string; order: string }> = {
  tenant: { key: 'tenant', order: 'cost_usd desc, key' },
  agent: { key: 'agent', order: 'cost_usd desc, key' },
  model: { key: 'model', order: 'cost_usd desc, key' },
  user: { key: 'user_name', order: 'cost_usd desc, key' },
  day: { key: `to_char(at at time zone 'UTC', 'YYYY-MM-DD')`, order: 'key' },
};

const sums = `count(*)::bigint as calls,
       coalesce(sum(input_tokens), 0)::bigint as input_tokens,
       coalesce(sum(output_tokens), 0)::bigint as output_tokens,
       coalesce(sum(cached_input_tokens), 0)::bigint as cached_input_tokens,
       coalesce(sum(reasoning_tokens), 0)::bigint as reasoning_tokens,
       coalesce(sum(cost_usd), 0)::numeric as cost_usd`;

/** One tenant's usage in `[from, to)`, grouped: most expensive first, days oldest first. */
export async function usageReport(
  db: Queryable,
  tenant: string,
  options: { groupBy: UsageGroup; from: Date | null; to: Date | null },
): Promise<UsageReport> {
  const grouping = groupings[options.groupBy];
  const params = [tenant, options.from, options.to];
  const where = `where tenant = $1 and ($2::timestamptz is null or at >= $2)
                   and ($3::timestamptz is null or at < $3)`;
  const items = await db.query<UsageTotals & { key: string | null }>(
    `select ${grouping.key} as key, ${sums} from usage ${where}
      group by 1 order by ${grouping.order}`,
    params,
  );
  const total = await db.query<UsageTotals>(`select ${sums} from usage ${where}`, params);
  return { items: items.rows, total: total.rows[0] as UsageTotals };
}
