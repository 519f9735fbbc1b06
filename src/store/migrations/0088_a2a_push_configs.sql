-- A2A push notifications (docs/protocols.md, "A2A"): where an A2A client wants a task's
-- state changes POSTed. A task is a turn; a config belongs to the user who made it, so
-- its URL and credentials are never shown to anyone else who may see the task. `token`
-- and `auth_*` are kept as the client gave them: the receiver verifies them, Parley only
-- sends them.
create table a2a_push_configs (
  push_id           text primary key,
  tenant            text not null,
  task_id           text not null,
  owner             text not null,
  config_id         text not null,
  session_id        text not null references sessions (session_id) on delete cascade,
  url               text not null,
  token             text,
  auth_scheme       text,
  auth_credentials  text,
  -- The task's story starts after this sequence (its admission's message).
  from_sequence     bigint not null,
  -- The journal's end when the config was made: what came before is one notification,
  -- the task's status as it then stood.
  created_sequence  bigint not null,
  -- How far the journal has been turned into notifications (null: not yet).
  followed_sequence bigint,
  -- The task's last state went out: nothing more to follow.
  finished          boolean not null default false,
  created_at        timestamptz not null default now(),
  unique (tenant, task_id, owner, config_id)
);

-- The configs still following their task's journal, by session (the wake-ups name one).
create index a2a_push_configs_following on a2a_push_configs (session_id) where not finished;

-- A delivery targets a configured webhook (its name in `webhook`) or a push config
-- (`push_id`; `webhook` is then `a2a_push:` and the id, so each config's notifications go
-- in order of their own). Removing a config removes its deliveries.
alter table webhook_deliveries
  add column target text not null default 'webhook' check (target in ('webhook', 'a2a_push'));
alter table webhook_deliveries
  add column push_id text references a2a_push_configs (push_id) on delete cascade;
create index webhook_deliveries_by_push on webhook_deliveries (push_id) where push_id is not null;
