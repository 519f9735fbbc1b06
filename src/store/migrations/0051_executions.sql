-- Executions of missions. An execution drives its own session through the public
-- path (each iteration is an admitted turn); its row is the durable timer: claimed like a
-- session (lease token + expiry, FOR UPDATE SKIP LOCKED over the due rows of a partial
-- index), every write token-gated, so a crash or a restart never loses or doubles a timer.

create table executions (
  tenant               text not null,
  execution_id         text not null,
  mission              text not null,
  agent                text not null,
  user_name            text not null,
  session_id           text not null references sessions (session_id) on delete cascade,
  -- Fan-out: a thread's parent (threads are executions of their own, id `PARENT.N`).
  parent_execution_id  text,
  -- A scheduled fire: the schedule and the fire time it started for.
  schedule             text,
  fire_time            timestamptz,
  -- overlap: queue — this one starts once that one has ended.
  after_execution_id   text,
  -- sha256 of what was dispatched: a retry must match it (like a turn's fingerprint).
  fingerprint          text not null,
  input                jsonb not null default '{}',
  -- The mission as it was when dispatched (prompt, loop prompt, delay, routing, threads):
  -- an edit of the mission applies to later executions, never to a running one.
  spec                 jsonb not null,
  interrupt_to         text,
  priority             smallint not null default 1,
  status               text not null default 'starting'
                       check (status in ('starting', 'running', 'success', 'interrupted',
                                         'cancelled', 'timeout', 'error', 'waiting', 'blocked',
                                         'limit_reached')),
  loop_status          text check (loop_status in ('idle', 'running', 'evaluating', 'waiting',
                                                   'blocked', 'completed', 'failed',
                                                   'limit_reached')),
  iteration            integer not null default 0,
  max_iterations       integer not null,
  -- Due when next_run_at <= now(); null = nothing to do until something wakes it (an ended
  -- execution, or a blocked one waiting for a person, without a timeout).
  next_run_at          timestamptz,
  timeout_at           timestamptz,
  loop_decision        jsonb,
  result               jsonb,
  -- Evaluations the model could not answer in the schema, in a row (one retry, then failed).
  evaluation_failures  integer not null default 0,
  -- What the person who unblocked it said: the next iteration's message carries it.
  resume_note          text,
  cancel_command_id    text,
  -- Agents answering this execution's requests: agent name → its session.
  resolvers            jsonb not null default '{}',
  -- Tokens of the execution's own model calls (evaluations); its turns' are on the session.
  input_tokens         bigint not null default 0,
  output_tokens        bigint not null default 0,
  lease_token          text,
  lease_owner          text,
  lease_expires_at     timestamptz,
  claim_count          integer not null default 0,
  -- Milliseconds, like the listing's cursor: a fan-out's rows share one transaction's now().
  created_at           timestamptz not null default date_trunc('milliseconds', now()),
  updated_at           timestamptz not null default now(),
  ended_at             timestamptz,
  primary key (tenant, execution_id)
);

-- The claim query's index: only rows with a timer are in it, so claiming stays cheap however
-- many executions have ended or wait for a person.
create index executions_due on executions (next_run_at) where next_run_at is not null;
-- A wake-up names an execution by its id (turn ids are `exec.ID.N`), without the tenant.
create index executions_by_id on executions (execution_id);
create index executions_by_session on executions (session_id);
create index executions_listing on executions (tenant, created_at desc, execution_id desc);
create index executions_children on executions (parent_execution_id)
  where parent_execution_id is not null;
create index executions_after on executions (after_execution_id)
  where after_execution_id is not null;
create index executions_by_schedule on executions (schedule, created_at desc)
  where schedule is not null;

-- Cancel and unblock commands, idempotent by (tenant, command_id) like turn cancels.
create table execution_commands (
  tenant        text not null,
  command_id    text not null,
  execution_id  text not null,
  kind          text not null check (kind in ('cancel', 'unblock')),
  result        text not null,
  status        text not null,
  created_at    timestamptz not null default now(),
  primary key (tenant, command_id)
);

-- An execution's evaluation step is a model call of its own, billed like the others.
alter table usage drop constraint usage_purpose_check;
alter table usage add constraint usage_purpose_check
  check (purpose in ('reply', 'gate', 'evaluation'));
