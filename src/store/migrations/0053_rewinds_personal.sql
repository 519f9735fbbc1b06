-- Rewinds and personal sessions.

-- A rewind journals `rewound` at `at_sequence`; the prompt history of later turns leaves out
-- the transcript between the checkpoint (`to_sequence`) and the rewind. Nothing is deleted.
create table rewinds (
  tenant        text not null,
  session_id    text not null references sessions (session_id) on delete cascade,
  at_sequence   bigint not null,
  to_sequence   bigint not null,
  created_at    timestamptz not null default now(),
  primary key (session_id, at_sequence)
);

-- Seed 003's personal threads: one active session per (tenant, user, agent), enforced here.
create table personal_sessions (
  session_id    text primary key references sessions (session_id) on delete cascade,
  tenant        text not null,
  user_name     text not null,
  agent         text not null,
  created_at    timestamptz not null default now(),
  archived_at   timestamptz
);

create unique index personal_sessions_active on personal_sessions (tenant, user_name, agent)
  where archived_at is null;
