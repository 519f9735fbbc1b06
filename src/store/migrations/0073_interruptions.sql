-- Interruptions (docs/governance.md): a call whose effect is unknown after a crash asks a
-- person whether it happened (`reconciliation`), and a tool that needs a user's credential
-- for a third party asks for it (`external_auth`).
alter table input_requests drop constraint input_requests_kind_check;
alter table input_requests add constraint input_requests_kind_check
  check (kind in ('approval', 'question', 'budget_extension', 'reconciliation', 'external_auth'));

-- An external_auth request: the third party, where the person grants access, and the user
-- whose credential the answer names (the user the turn's tools act for).
alter table input_requests add column provider text;
alter table input_requests add column url text;
alter table input_requests add column user_name text;

-- A user's credential for a third party, as a reference only (`vault:...`, a variable
-- name the operator configured): the secret itself lives elsewhere and never here.
create table credentials (
  tenant         text not null,
  user_name      text not null,
  provider       text not null,
  credential_ref text not null,
  created_at     timestamptz not null default now(),
  updated_at     timestamptz not null default now(),
  primary key (tenant, user_name, provider)
);
