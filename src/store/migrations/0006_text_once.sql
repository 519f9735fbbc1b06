-- Text is stored once. A `message` or `done` event refers to its transcript row
-- and is rebuilt from it on read (src/store/eventRows.ts) instead of carrying a copy of the
-- text. Events written before this keep their full payload (message_id null) and read as
-- they were.
alter table events add column message_id text;
