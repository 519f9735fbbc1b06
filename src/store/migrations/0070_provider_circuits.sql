-- Each provider's circuit (providers.md, "Circuit protection") as a process last reported
-- it: a change of state is written here so that the catalog shows it to every process.
-- Deployment-wide, like `models`: providers are the operator's, not a tenant's.
create table provider_circuits (
  provider    text primary key,
  state       text not null check (state in ('closed', 'open', 'half_open')),
  failures    integer not null,
  changed_at  timestamptz not null default now()
);
