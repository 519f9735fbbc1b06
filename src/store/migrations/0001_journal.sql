-- Parley's schema, version 1: sessions (with the lease), turns, the transcript and the
-- journal. Every table carries `tenant`, and every query filters on it.

create table sessions (
  session_id        text primary key,
  tenant            text not null,
  agent             text not null,
  title             text,
  state             text not null default 'idle'
                    check (state in ('idle', 'queued', 'running', 'input_required', 'parked', 'closed')),
  -- The journal counter: sequences are allocated by bumping it inside the writing
  -- transaction, so writers to one session serialise on this row and readers see no hole.
  last_sequence     bigint not null default 0,
  earliest_sequence bigint not null default 1,
  -- Inputs (admitted turns) are numbered per session; input_cursor is the highest one a
  -- finished turn consumed. input_count > input_cursor means "has pending input".
  input_count       bigint not null default 0,
  input_cursor      bigint not null default 0,
  lease_token       text,
  lease_owner       text,
  lease_expires_at  timestamptz,
  -- Claims since the last applied turn write; parking happens past the configured limit.
  claim_count       integer not null default 0,
  -- Attempts of the burst now being answered, and whether the last one left partial text.
  attempt           integer not null default 0,
  partial_output    boolean not null default false,
  current_turn_id   text,
  input_tokens      bigint not null default 0,
  output_tokens     bigint not null default 0,
  cost_usd          numeric(20, 8) not null default 0,
  created_at        timestamptz not null default now(),
  updated_at        timestamptz not null default now()
);

create index sessions_by_activity on sessions (tenant, updated_at desc, session_id desc);

-- The claim query's index: only sessions with pending input are in it, so claiming stays
-- cheap however many idle sessions exist.
create index sessions_claimable on sessions (lease_expires_at nulls first)
  where input_count > input_cursor and state <> 'parked';

create table turns (
  tenant            text not null,
  turn_id           text not null,
  session_id        text not null references sessions (session_id) on delete cascade,
  position          bigint not null,
  state             text not null default 'queued'
                    check (state in ('queued', 'running', 'done', 'error', 'cancelled')),
  -- sha256 of what was admitted (message, agent, option): a retry must match it exactly.
  fingerprint       text not null,
  admitted_sequence bigint not null,
  message_id        text not null,
  -- The turn whose reply answered this one (the lead turn of its burst).
  answered_by       text,
  created_at        timestamptz not null default now(),
  completed_at      timestamptz,
  primary key (tenant, turn_id),
  unique (session_id, position)
);

create table messages (
  message_id  text primary key,
  tenant      text not null,
  session_id  text not null references sessions (session_id) on delete cascade,
  turn_id     text,
  role        text not null check (role in ('user', 'assistant', 'system')),
  author      text not null,
  content     text not null,
  sequence    bigint not null,
  created_at  timestamptz not null default now(),
  -- A retried turn can never duplicate the transcript (RUNTIME.md).
  unique (tenant, session_id, turn_id, role)
);

create index messages_transcript on messages (session_id, sequence desc);

create table events (
  session_id  text not null references sessions (session_id) on delete cascade,
  sequence    bigint not null,
  tenant      text not null,
  type        text not null,
  turn_id     text,
  payload     jsonb not null,
  at          timestamptz not null default now(),
  primary key (session_id, sequence)
);

create index events_by_age on events (at);
