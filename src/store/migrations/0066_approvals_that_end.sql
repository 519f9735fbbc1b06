-- Approvals that end (docs/governance.md).

-- A request may have a deadline: past it, the durable timer resolves it with its safe
-- default (`on_timeout`: reject unless the operator configured approve for the tool).
alter table input_requests add column deadline_at timestamptz;
alter table input_requests add column on_timeout text not null default 'reject'
  check (on_timeout in ('reject', 'approve'));

-- An approval shows the sha-256 of the canonical JSON of its arguments; an answer that
-- names another digest is stale. `human_only` requests require the digest in the answer.
alter table input_requests add column arguments_digest text;
alter table input_requests add column human_only boolean not null default false;

-- When the turn resumed after the request was resolved (null while it has not).
alter table input_requests add column resumed_at timestamptz;

-- `expired` stays for superseded requests; a cancelled turn's are `cancelled`, a deadline
-- makes `timeout`, a turn that failed for good leaves its requests `error`.
alter table input_requests drop constraint input_requests_state_check;
alter table input_requests add constraint input_requests_state_check
  check (state in ('pending', 'answered', 'expired', 'cancelled', 'timeout', 'error'));

-- The timer's round: the pending requests whose deadline is due, earliest first.
create index input_requests_due on input_requests (deadline_at)
  where state = 'pending' and deadline_at is not null;
