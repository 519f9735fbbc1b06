import { activeSql } from './activity.js';

/**
 * Sweeps across tenants through `sessions_by_activity` (tenant, the second of `updated_at`:
 * activity.ts), the one index of sessions by time: a statement that looks for sessions
 * written recently (or long ago) in every tenant walks that index tenant by tenant instead
 * of keeping a second index on `updated_at` alone, which every journaling statement (three
 * a turn) would add an entry to.
 *
 * `tenantsSql` is a recursive common table expression (the statement begins `with
 * recursive`) of the tenants that have sessions, found by skipping from one tenant to the
 * next in the index (one probe per tenant, whatever their sessions); `only` is the SQL of a
 * single tenant instead (a parameter), when the statement is for one.
 */
export function tenantsSql(only: string | null = null): string {
  if (only !== null) return `tenants (tenant) as (select ${only}::text)`;
  return `tenants (tenant) as (
      (select tenant from sessions order by tenant limit 1)
      union all
      select (select s.tenant from sessions s where s.tenant > t.tenant order by s.tenant limit 1)
        from tenants t where t.tenant is not null
    )`;
}

/**
 * The sessions of every tenant (`tenantsSql`) written in the last `ms` milliseconds (the
 * SQL of a bigint), as a relation with their `session_id`.
 */
export function recentSessionsSql(ms: string): string {
  return `(select r.session_id
             from tenants t
             cross join lateral (
               select x.session_id from sessions x
                where x.tenant = t.tenant
                  and ${activeSql('x', '>', `(now() - ${ms} * interval '1 millisecond')`)}) r
            where t.tenant is not null)`;
}

/**
 * The sessions a follower's sweep reads, as SQL parts of a statement over sessions `s`:
 * those named (`ids`, the SQL of a text[] parameter: those that just woke up), else those
 * written in the last `ms` milliseconds (walked tenant by tenant), else all (`ms` null).
 * `recent` says which the input asks for; the statement is
 * `${parts.with} select … from ${parts.from} … where … and ${parts.where}`.
 */
export function sweptSessions(
  input: { sessionIds?: string[]; recentMs: number | null },
  sql: { ids: string; ms: string },
): { with: string; from: string; where: string } {
  if (input.sessionIds === undefined && input.recentMs !== null) {
    return {
      with: `with recursive ${tenantsSql()}`,
      from: `${recentSessionsSql(sql.ms)} r join sessions s on s.session_id = r.session_id`,
      // No sessions named (the parameter is still the statement's).
      where: `${sql.ids} is null`,
    };
  }
  return {
    with: '',
    from: 'sessions s',
    where: `(${sql.ids} is null or s.session_id = any(${sql.ids}))
        and (${sql.ms} is null or s.updated_at > now() - ${sql.ms} * interval '1 millisecond')`,
  };
}
