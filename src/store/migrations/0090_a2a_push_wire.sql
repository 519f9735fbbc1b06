-- The A2A version a push config was made with: its notifications go out in that version's
-- shape (1.0: a `StreamResponse`, `application/a2a+json`; 0.3: the status-update event
-- itself, `application/json`), as the SDK's sender serializes per config.
alter table a2a_push_configs
  add column wire text not null default '1.0' check (wire in ('1.0', '0.3'));
