/**
 * Glossary of spending budgets (the `budgets` and `budget_reservations` tables, migrations
 * 0069 and 0074), shared by the operations that read them:
 * - budget: a limit on a metric (`cost_usd`, `tokens`, `tool_calls`, `wall_ms`) for a
 *   scope of a tenant (the whole tenant, a user = a session's owner, an agent, a session,
 *   an execution with its threads) per period (`day`, `month`, UTC; `run` = each turn on
 *   its own).
 * - used: what the scope's `usage` rows of the current period add up to (`wall_ms`: the
 *   model calls' latency plus the tool time billed with them).
 * - reserved: the worst cases of the scope's model calls in flight (live reservations);
 *   for `tool_calls` the calls a step in flight may run, for `wall_ms` the time those
 *   steps have run so far.
 */
export type BudgetScope = 'tenant' | 'user' | 'agent' | 'session' | 'execution';
export type BudgetMetric = 'cost_usd' | 'tokens' | 'tool_calls' | 'wall_ms';
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
    or (${b}.scope = 'user' and ${owner} = ${b}.scope_id)
    or (${b}.scope = 'execution' and ${row}.session_id in (
          select e.session_id from executions e
           where e.tenant = ${b}.tenant
             and (e.execution_id = ${b}.scope_id or e.parent_execution_id = ${b}.scope_id))))`;

/** What usage row `u` counts toward budget `b`. */
const counted = (b: string, u: string) => `case ${b}.metric
    when 'cost_usd' then ${u}.cost_usd
    when 'tool_calls' then ${u}.tool_calls
    when 'wall_ms' then ${u}.latency_ms + ${u}.tool_ms
    else ${u}.input_tokens + ${u}.output_tokens end`;

/** What reservation `r` holds of budget `b`: a step in flight's time counts as it runs. */
const held = (b: string, r: string) => `case ${b}.metric
    when 'cost_usd' then ${r}.cost_usd
    when 'tool_calls' then ${r}.tool_calls
    when 'wall_ms' then extract(epoch from now() - ${r}.reserved_at) * 1000
    else ${r}.tokens end`;

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
    ? `(select coalesce(sum(${counted(b, 'u')}), 0)
          from usage u where u.session_id = ${turn.sessionId} and u.turn_id = ${turn.turnId})`
    : 'null';
  const userOf = `(select s.owner from sessions s where s.session_id = u.session_id)`;
  const used = `case when ${b}.period = 'run' then ${ofTurn} else (
      select coalesce(sum(${counted(b, 'u')}), 0)
        from usage u
       where u.tenant = ${b}.tenant and u.at >= ${periodStart(b)}
         and ${inScope(b, 'u', userOf)}) end::float8`;
  const turnFilter = turn
    ? `(${b}.period <> 'run' or (r.session_id = ${turn.sessionId} and r.turn_id = ${turn.turnId}))`
    : 'true';
  const exceptFilter = except
    ? `not (r.session_id = ${except.sessionId} and r.call_key = ${except.callKey})`
    : 'true';
  const reserved = `(select coalesce(sum(${held(b, 'r')}), 0)
        from budget_reservations r
       where r.tenant = ${b}.tenant and ${inScope(b, 'r', 'r.owner')}
         and ${turnFilter} and ${exceptFilter} and ${liveReservation('r')})::float8`;
  return { used, reserved };
}

/**
 * The budgets of `tenant` that apply to a call in `session` of `agent` owned by `owner`
 * (an execution budget: the session is its execution's, or a thread's of it).
 */
export const applicableSql = (tenant: string, agent: string, session: string, owner: string) =>
  `b.tenant = ${tenant} and (b.scope = 'tenant'
     or (b.scope = 'agent' and b.scope_id = ${agent})
     or (b.scope = 'session' and b.scope_id = ${session})
     or (b.scope = 'user' and b.scope_id = ${owner})
     or (b.scope = 'execution' and exists (
           select 1 from executions e
            where e.session_id = ${session}
              and b.scope_id in (e.execution_id, e.parent_execution_id))))`;
