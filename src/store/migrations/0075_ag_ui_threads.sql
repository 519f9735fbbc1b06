-- AG-UI threads (docs/protocols.md): an AG-UI client names its conversation with a thread
-- id it made up (HttpAgent: a uuid). The first run of a thread creates a session and this
-- row in one transaction, so a crash never leaves a thread with two sessions; later runs
-- find the session here. Per tenant: two tenants' thread ids never meet.
create table ag_ui_threads (
  tenant     text not null,
  thread_id  text not null,
  session_id text not null references sessions (session_id) on delete cascade,
  created_at timestamptz not null default now(),
  primary key (tenant, thread_id)
);
create index ag_ui_threads_session on ag_ui_threads (session_id);
