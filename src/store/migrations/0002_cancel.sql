-- Cancellation (PROTOCOL.md §5): commands are idempotent by (tenant, command_id); a cancel
-- of the running burst is a request on the session row that the lease holder honours at
-- its next step (cooperative), and that commitTurn checks under the same row lock.

alter table sessions add column cancel_command_id text;

create table commands (
  tenant      text not null,
  command_id  text not null,
  session_id  text not null references sessions (session_id) on delete cascade,
  turn_id     text not null,
  result      text not null check (result in ('cancelled', 'too_late')),
  state       text not null,
  sequence    bigint not null,
  created_at  timestamptz not null default now(),
  primary key (tenant, command_id)
);
