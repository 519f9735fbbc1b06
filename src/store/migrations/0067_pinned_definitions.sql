-- Definitions pinned per run: a turn runs with the agent revision it started with, an
-- execution records the mission revision it started with.

-- Every revision a definition row has had, written by the statement that writes the row
-- (an admin's edit, a seed at start): a running turn loads the revision it started with
-- after an edit or a deploy replaced it. Revisions come from one sequence, so a revision
-- names one row version of one (kind, tenant, name).
create table definition_history (
  kind          text not null,
  tenant        text not null,
  name          text not null,
  revision      bigint not null,
  definition    jsonb not null,
  content_hash  text not null,
  created_at    timestamptz not null default now(),
  primary key (kind, tenant, name, revision)
);

insert into definition_history (kind, tenant, name, revision, definition, content_hash)
  select kind, tenant, name, revision, definition, content_hash from definitions;

-- The agent revision a turn runs with: recorded when it first starts (or at admission,
-- when the client names one), kept by every later attempt.
alter table turns add column agent_revision bigint;

-- The mission revision an execution was dispatched with.
alter table executions add column mission_revision bigint;
