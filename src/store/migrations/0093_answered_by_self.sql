-- A turn answered by a burst it leads (nearly every turn) stores no answered_by: null, read
-- as the turn itself once it has ended (src/store/readTurnOutcome.ts). Rows written before
-- keep their own id there; both read the same.
comment on column turns.answered_by is
  'the lead turn of the burst that ended this turn; null while it runs, and when it led that burst itself';
