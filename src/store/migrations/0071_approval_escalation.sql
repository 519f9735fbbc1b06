-- Approvals that escalate and remind (docs/governance.md, "Escalation and reminders").

-- What a pending request still does by itself before its deadline, in time order: each
-- element `{at, kind: 'escalate', step, to}` or `{at, kind: 'remind'}`. The approval timer
-- takes the due ones in the transaction that journals them, so each happens once.
alter table input_requests add column nudges jsonb not null default '[]'::jsonb;
alter table input_requests add column next_nudge_at timestamptz;

-- Whom its escalations added to its audience so far (`user:NAME` or `role:NAME`, in step
-- order; empty: not escalated), and which step of its chain it reached (0: none yet).
alter table input_requests add column escalated_to text[] not null default '{}';
alter table input_requests add column escalation_step integer not null default 0;

create index input_requests_nudge_due on input_requests (next_nudge_at)
  where state = 'pending' and next_nudge_at is not null;
