/**
 * The key of `sessions_by_activity (tenant, <second of updated_at>)`: the second of a
 * session's last activity. Every journaling statement sets `updated_at` (three or more a
 * turn); keyed by the second, a turn's statements mostly add entries of one key, which
 * the B-tree keeps as one posting list. A query bounds this key (the index condition),
 * bounds `updated_at` itself in a filter, and orders by both (`activityOrder`).
 */
export function activitySql(instant: string): string {
  return `date_bin('1 second', ${instant}, timestamptz '2000-01-01 00:00:00+00')`;
}

/**
 * `<alias>.updated_at <op> <instant>` (SQL), with the index's key bounded too: the second
 * at or after the instant's for `>=` and `>`, at or before it for `<=` and `<`.
 */
export function activeSql(alias: string, op: '>=' | '>' | '<' | '<=', instant: string): string {
  const keyOp = op === '>' ? '>=' : op === '<' ? '<=' : op;
  return `${activitySql(`${alias}.updated_at`)} ${keyOp} ${activitySql(instant)}
          and ${alias}.updated_at ${op} ${instant}`;
}

/** Sessions `alias` oldest (`asc`) or newest (`desc`) first, by the index's order. */
export function activityOrder(alias: string, direction: 'asc' | 'desc'): string {
  return `${activitySql(`${alias}.updated_at`)} ${direction}, ${alias}.updated_at ${direction}`;
}
