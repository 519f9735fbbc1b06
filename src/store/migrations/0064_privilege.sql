-- The privilege layer: agent-to-agent approvals.

-- A request routed to an agent (a mission's interrupt_to agent:NAME) that the agent may not
-- answer — the requesting agent's approver_roles do not name it, or the tool is human_only
-- — is handed to people: declined_by names that agent, and the request is then listed and
-- answered like one with the execution's default route (its own user; an admin always).
alter table input_requests add column declined_by text;

-- An agent's structured approval decision is a provider call, billed like the others.
alter table usage drop constraint usage_purpose_check;
alter table usage add constraint usage_purpose_check
  check (purpose in ('reply', 'gate', 'evaluation', 'approval'));
