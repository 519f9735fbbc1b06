-- The actor of every command is the authenticated principal, and the journal records it.
alter table commands add column actor jsonb;
