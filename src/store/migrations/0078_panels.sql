-- UI panels (docs/web.md, "Panels"): documents of palette components (src/protocol/panels.ts)
-- that a user or the user's agents keep. A `session` panel shows beside its conversation and
-- goes with it; a `workspace` panel shows on the desktop. Ephemeral panels are never stored:
-- they live in the stream that showed them. Listed per owner and scope, newest first.
create table panels (
  panel_id     text primary key,
  tenant       text not null,
  owner        text not null,
  scope        text not null check (scope in ('session', 'workspace')),
  -- A session panel's conversation: the panel goes with it.
  session_id   text references sessions (session_id) on delete cascade,
  -- The conversation a panel's forms submit to (a session panel's own; the one whose agent
  -- made a workspace panel, or the one its maker named).
  origin_session_id text references sessions (session_id) on delete set null,
  workspace_id text,
  title        text not null,
  channel      text not null,
  document     jsonb not null,
  created_at   timestamptz not null default now(),
  updated_at   timestamptz not null default now(),
  check (scope <> 'session' or session_id is not null)
);
create index panels_by_owner on panels (tenant, owner, scope, created_at desc, panel_id desc);
create index panels_by_session on panels (session_id) where session_id is not null;
create index panels_by_origin on panels (origin_session_id) where origin_session_id is not null;
create index panels_by_workspace on panels (tenant, workspace_id) where workspace_id is not null;
