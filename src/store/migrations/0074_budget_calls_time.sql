-- Budgets on tool calls and wall time, and on executions (docs/governance.md, "Budgets
-- that are enforced").
--
-- usage.tool_calls: the tool calls a model call asked for that run or wait for a person
--   (not the ones policy or a budget denied). Written with the call's row, so a budget's
--   `tool_calls` used is read like its tokens: exactly once across crashes and replays.
-- usage.tool_ms: how long the tool calls this model call follows took (each call in full,
--   concurrent ones added up). A budget's `wall_ms` used is latency_ms + tool_ms.
alter table usage add column tool_calls integer not null default 0;
alter table usage add column tool_ms bigint not null default 0;

-- How many tool calls the step in flight may run (what it holds of a tool_calls budget).
alter table budget_reservations add column tool_calls integer not null default 0;

alter table budgets drop constraint budgets_metric_check;
alter table budgets add constraint budgets_metric_check
  check (metric in ('cost_usd', 'tokens', 'tool_calls', 'wall_ms'));
-- An execution budget covers the execution's session and its fan-out threads' sessions.
alter table budgets drop constraint budgets_scope_check;
alter table budgets add constraint budgets_scope_check
  check (scope in ('tenant', 'user', 'agent', 'session', 'execution'));
