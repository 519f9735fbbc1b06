/**
 * Glossary of spending budgets (the `budgets` and `budget_reservations` tables, migration
 * 0069), shared by the operations that read them:
 * - budget: a limit on a metric (`cost_usd`, `tokens`) for a scope of a tenant (the whole
 *   tenant, a user = a session's owner, an agent, a session) per period (`day`, `month`,
 *   UTC; `run` = each turn on its own).
 * - used: what the scope's `usage` rows of the current period add up to.
 * - reserved: the worst cases of the scope's model calls in flight (live reservations).
 */
export type BudgetScope = 'tenant' | 'user' | 'agent' | 'session';
export type BudgetMetric = 'cost_usd' | 'tokens';
export type BudgetPeriod = 'day' | 'month' | 'run';

export interface Budget {
  budget_id: string;
  scope: BudgetScope;
  scope_id: string | null;
  metric: BudgetMetric;
  period: BudgetPeriod;
  limit: number;
  origin: 'config' | 'api';
  updated_by: string | null;
  updated_at: Date;
}

export interface BudgetStanding extends Budget {
  /** Null for a `run` budget outside a turn: each turn has its own. */
  used: number | null;
  reserved: number;
}

export const budgetColumns = `b.budget_id, b.scope, b.scope_id, b.metric, b.period,
       b.limit_value::float8 as "limit", b.origin, b.updated_by, b.updated_at`;

/** A reservation counts while the lease that made it is live. */
export const liveReservation = (r: string) => `exists (
  select 1 from sessions s
   where s.session_id = ${r}.session_id and s.lease_token = ${r}.lease_token
     and s.lease_expires_at > now())`;

/** The start of budget `b`'s current period (UTC calendar day or month). */
const periodStart = (
  b: string,
) => `(date_trunc(case ${b}.period when 'day' then 'day' else 'month' end,
                      now() at time zone 'UTC') at time zone 'UTC')`;

/** Does the usage row or reservation `row` fall in budget `b`'s scope? */
const inScope = (b: string, row: string, owner: string) => `(${b}.scope = 'tenant'
    or (${b}.scope = 'agent' and ${row}.agent = ${b}.scope_id)
    or (${b}.scope = 'session' and ${row}.session_id = ${b}.scope_id)
    or (${b}.scope = 'user' and ${owner} = ${b}.scope_id))`;

const measure = (b: string, row: string, tokens: string) =>
  `case when ${b}.metric = 'cost_usd' then ${row}.cost_usd else ${tokens} end`;

/**
 * `used` and `reserved` of budget `b` (SQL expressions). `turn` names the turn a `run`
 * budget is read for (session and turn parameters), or is null: `used` is then null for
 * `run` budgets, and `reserved` counts every turn in flight. `except` leaves out one
 * reservation (the call being reserved again).
 */
export function standingSql(
  b: string,
  turn: { sessionId: string; turnId: string } | null,
  except: { sessionId: string; callKey: string } | null = null,
): { used: string; reserved: string } {
  const ofTurn = turn
    ? `(select coalesce(sum(${measure(b, 'u', 'u.input_tokens + u.output_tokens')}), 0)
          from usage u where u.session_id = ${turn.sessionId} and u.turn_id = ${turn.turnId})`
    : 'null';
  const userOf = `(select s.owner from sessions s where s.session_id = u.session_id)`;
  const used = `case when ${b}.period = 'run' then ${ofTurn} else (
      select coalesce(sum(${measure(b, 'u', 'u.input_tokens + u.output_tokens')}), 0)
        from usage u
       where u.tenant = ${b}.tenant and u.at >= ${periodStart(b)}
         and ${inScope(b, 'u', userOf)}) end::float8`;
  const turnFilter = turn
    ? `(${b}.period <> 'run' or (r.session_id = ${turn.sessionId} and r.turn_id = ${turn.turnId}))`
    : 'true';
  const exceptFilter = except
    ? `not (r.session_id = ${except.sessionId} and r.call_key = ${except.callKey})`
    : 'true';
  const reserved = `(select coalesce(sum(${measure(b, 'r', 'r.tokens')}), 0)
        from budget_reservations r
       where r.tenant = ${b}.tenant and ${inScope(b, 'r', 'r.owner')}
         and ${turnFilter} and ${exceptFilter} and ${liveReservation('r')})::float8`;
  return { used, reserved };
}

/** The budgets of `tenant` that apply to a call in `session` of `agent` owned by `owner`. */
export const applicableSql = (tenant: string, agent: string, session: string, owner: string) =>
  `b.tenant = ${tenant} and (b.scope = 'tenant'
     or (b.scope = 'agent' and b.scope_id = ${agent})
     or (b.scope = 'session' and b.scope_id = ${session})
     or (b.scope = 'user' and b.scope_id = ${owner}))`;
