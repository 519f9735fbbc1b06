-- A journal row refers to the transcript row it is rebuilt from (a `message`, a `done`, a
-- `text_delta` that is its whole reply) by the distance between their sequences: a
-- transcript row's `sequence` is that of the event that journaled it. Two bytes where the
-- message id took 32. Rows written before keep `message_id`; readers take either
-- (src/store/eventRows.ts).
alter table events add column message_offset smallint;
