-- Chat platforms. A platform thread is a Parley session (tenant-scoped: each
-- adapter belongs to one tenant and one agent); its replies go out through a durable outbox.

create table adapter_threads (
  tenant            text not null,
  adapter           text not null,
  thread_id         text not null,
  session_id        text not null unique references sessions (session_id) on delete cascade,
  -- How far this session's journal has been folded into adapter_replies: the follower
  -- resumes here after a crash, so a committed reply is delivered even if the process
  -- died before sending it.
  followed_sequence bigint not null default 0,
  -- The reply still receiving text (the running turn's current message), if any.
  open_reply_id     text,
  -- A worker holds the session: from turn_started to done, error, cancelled or input_required.
  typing            boolean not null default false,
  -- The platform's context of the latest message that ran a turn (Slack: the workspace
  -- and user a streamed reply is addressed to).
  context           jsonb not null default '{}'::jsonb,
  created_at        timestamptz not null default now(),
  primary key (tenant, adapter, thread_id)
);

-- The outbox: one row per platform message Parley posts (a reply, an approval card, a
-- notice). `content` is what the message should show now; `version` counts its changes
-- and `delivered_version` the last one the platform confirmed, so a row is due while
-- they differ. The platform's message id is recorded once posted: every later change
-- is an edit of that message, never a second post.
create table adapter_replies (
  reply_id            text primary key,
  tenant              text not null,
  adapter             text not null,
  thread_id           text not null,
  session_id          text not null references sessions (session_id) on delete cascade,
  turn_id             text,
  kind                text not null check (kind in ('reply', 'approval', 'notice')),
  request_id          text,
  content             jsonb not null,
  version             integer not null default 0,
  delivered_version   integer not null default 0,
  -- No further change will come (the turn ended, the request was resolved).
  final               boolean not null default false,
  platform_message_id text,
  -- Platform streaming state (Slack: how much text the open stream has been given).
  stream              jsonb,
  state               text not null default 'pending'
                      check (state in ('pending', 'delivered', 'dead')),
  attempts            integer not null default 0,
  next_attempt_at     timestamptz not null default now(),
  last_sent_at        timestamptz,
  last_error          text,
  lease_token         text,
  lease_expires_at    timestamptz,
  created_at          timestamptz not null default now(),
  updated_at          timestamptz not null default now()
);

create index adapter_replies_pending on adapter_replies (next_attempt_at) where state = 'pending';
create index adapter_replies_by_session on adapter_replies (session_id, reply_id);
create index adapter_replies_by_request on adapter_replies (session_id, request_id)
  where request_id is not null;

-- The followers' periodic sweep finds sessions written to recently by this index (their
-- wake-ups make it the exception, not the rule).
create index sessions_by_update on sessions (updated_at);
