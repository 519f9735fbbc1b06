-- Retention (docs/retention.md): every rule deletes in bounded batches, oldest first, so
-- each one needs an index that finds its next batch without scanning what it keeps.

-- Finished deliveries and outbox rows, by age (pending ones are never pruned).
create index webhook_deliveries_finished on webhook_deliveries (created_at)
  where state <> 'pending';
create index adapter_replies_finished on adapter_replies (updated_at)
  where state <> 'pending';

-- Usage rows across tenants, and the bookkeeping of applied memory effects, by age.
create index usage_by_time on usage (at);
create index memory_effects_by_time on memory_effects (applied_at);
create index schedule_fires_by_time on schedule_fires (fire_time);

-- An execution's commands go with it (no foreign key: commands name it by id).
create index execution_commands_by_execution on execution_commands (tenant, execution_id);

-- Deleting a whole session removes its rows in every table that hangs off it; these had
-- no index that starts with the session.
create index commands_by_session on commands (session_id);
create index option_offers_by_session on option_offers (session_id);
create index input_requests_by_session on input_requests (session_id);
create index webhook_streams_by_session on webhook_streams (session_id);
create index webhook_deliveries_by_session on webhook_deliveries (session_id, sequence);
