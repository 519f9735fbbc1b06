-- A turn finds its user message by the sequence it was admitted at: the message's
-- transcript row has that sequence (`messages_transcript (session_id, sequence)`), as every
-- admission writes both in one statement. `turns.message_id` (30 characters a turn, and
-- in every version of the row the turn's updates leave) is no longer written; rows written
-- before keep it, and nothing reads it.
alter table turns alter column message_id drop not null;
