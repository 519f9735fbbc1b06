-- Workspaces (docs/web.md, "Workspaces"): a tenant's named groups of sessions and
-- executions; the active one (the `workspace_id` preference) filters the web desktop.
--
-- workspaces: one row per workspace of a tenant.
--   member_roles, member_users: who is a member — a principal with one of the roles, or
--   the user. Both empty: the whole tenant. A tenant admin is a member of every one.
--   name: unique per tenant whatever its case ("Sales" and "sales" are one name).
-- A session or an execution names at most one workspace; deleting a workspace sets their
-- `workspace_id` to null first (src/store/workspaces.ts), in the same transaction, so
-- the foreign keys below never refuse it — they refuse a reference to a workspace that
-- is gone, which a concurrent delete would otherwise leave behind.
create table workspaces (
  tenant        text not null,
  workspace_id  text not null,
  name          text not null,
  description   text,
  member_roles  text[] not null default '{}',
  member_users  text[] not null default '{}',
  created_by    text not null,
  created_at    timestamptz not null default now(),
  updated_at    timestamptz not null default now(),
  primary key (tenant, workspace_id)
);

create unique index workspaces_name on workspaces (tenant, lower(name));

alter table sessions add column workspace_id text;
alter table sessions add constraint sessions_workspace
  foreign key (tenant, workspace_id) references workspaces (tenant, workspace_id);
create index sessions_by_workspace on sessions (tenant, workspace_id)
  where workspace_id is not null;

alter table executions add column workspace_id text;
alter table executions add constraint executions_workspace
  foreign key (tenant, workspace_id) references workspaces (tenant, workspace_id);
create index executions_by_workspace on executions (tenant, workspace_id)
  where workspace_id is not null;
