-- Usage: one row per provider call, written inside the turn's commit, for cost
-- attribution by tenant, agent and model. No foreign key to sessions: billing rows
-- outlive whatever happens to a conversation.

create table usage (
  usage_id             bigint generated always as identity primary key,
  tenant               text not null,
  session_id           text not null,
  turn_id              text,
  agent                text not null,
  model                text not null,            -- provider/model
  -- `reply`: a step of the agent's model; `gate`: the scope gate's classification
  purpose              text not null default 'reply' check (purpose in ('reply', 'gate')),
  -- `ok`, or a call whose tokens are billed although it did not complete
  outcome              text not null default 'ok' check (outcome in ('ok', 'failed', 'cancelled')),
  input_tokens         bigint not null default 0,  -- every input token, cached ones included
  output_tokens        bigint not null default 0,  -- reasoning tokens included
  cached_input_tokens  bigint not null default 0,
  reasoning_tokens     bigint not null default 0,
  cost_usd             numeric(20, 8) not null default 0,
  latency_ms           integer not null default 0,
  ttft_ms              integer,
  at                   timestamptz not null default now()
);

create index usage_by_tenant_time on usage (tenant, at);
