-- Spending budgets (docs/governance.md, "Budgets that are enforced").
--
-- budgets: a limit on tokens or cost for a scope of a tenant, per period.
--   scope: tenant (scope_id null), user (a session's owner), agent, or session.
--   metric: cost_usd (USD from the pricing table) or tokens (input + output).
--   period: day or month (UTC calendar periods), or run (each turn on its own).
--   What a budget has used is read from the `usage` rows of its period, so settling a
--   call is recording its usage: nothing to keep in step, nothing to reset when a period
--   turns over.
create table budgets (
  tenant       text not null,
  budget_id    text not null,
  scope        text not null check (scope in ('tenant', 'user', 'agent', 'session')),
  scope_id     text,
  metric       text not null check (metric in ('cost_usd', 'tokens')),
  period       text not null check (period in ('day', 'month', 'run')),
  limit_value  numeric(20, 8) not null check (limit_value >= 0),
  -- `config` (seeded from the operator's file) or `api` (a tenant admin's edit)
  origin       text not null default 'api' check (origin in ('config', 'api')),
  updated_by   text,
  updated_at   timestamptz not null default now(),
  primary key (tenant, budget_id),
  check ((scope = 'tenant') = (scope_id is null))
);

-- budget_reservations: the worst case of a model call in flight, held against every
-- budget that applies to it until the statement that bills the call deletes it. Keyed by
-- the call's identity, so a re-run of the same call replaces its reservation. A
-- reservation counts only while the lease that made it is live: a crashed worker's
-- reservation stops counting when its lease expires or another worker claims the session,
-- and is deleted by the session's next billing statement or the tenant's next reservation.
create table budget_reservations (
  tenant       text not null,
  session_id   text not null references sessions (session_id) on delete cascade,
  -- turn:attempt:step
  call_key     text not null,
  turn_id      text not null,
  agent        text not null,
  owner        text,
  lease_token  text not null,
  tokens       bigint not null,
  cost_usd     numeric(20, 8) not null,
  reserved_at  timestamptz not null default now(),
  primary key (session_id, call_key)
);
create index budget_reservations_by_tenant on budget_reservations (tenant);

-- A `run` budget reads the usage of one turn.
create index usage_by_turn on usage (session_id, turn_id);
