-- Tools and approvals (PROTOCOL.md §4). The burst being answered keeps its working
-- conversation (model steps, tool calls and their status) on the session row, written
-- token-gated, so whoever owns the session next rebuilds the exact prompt.
alter table sessions add column burst jsonb;

-- A session waiting for a person (state input_required) is not claimable: an answer, a
-- superseding message or a cancel makes it `queued` again.
drop index sessions_claimable;
create index sessions_claimable on sessions (lease_expires_at nulls first)
  where input_count > input_cursor and state not in ('parked', 'input_required');

create table input_requests (
  request_id        text primary key,
  tenant            text not null,
  session_id        text not null references sessions (session_id) on delete cascade,
  turn_id           text not null,
  call_id           text not null,
  kind              text not null check (kind in ('approval', 'question', 'budget_extension')),
  tool              text,
  arguments         jsonb,
  expected_sequence bigint not null,
  state             text not null default 'pending'
                    check (state in ('pending', 'answered', 'expired')),
  approved          boolean,
  response          jsonb,
  actor             jsonb,
  created_at        timestamptz not null default now(),
  answered_at       timestamptz
);

create index input_requests_pending on input_requests (session_id) where state = 'pending';
