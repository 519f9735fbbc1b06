-- Sessions by activity, ascending and narrower. Every journaling statement sets its
-- session's `updated_at` to now(), so each update adds an entry at the newest end of the
-- tenant's range. Descending, that end is the range's left, where a full page splits in
-- half and stays half empty (with the dead entries the updates leave until vacuum, about
-- 290 bytes a turn in the bench); ascending, it is the right, where a split leaves the left
-- page full. Lists newest first read it backwards, as fast; the session id, a tie-break of
-- their order only, is left out of the key (sessions of one instant are sorted after).
drop index sessions_by_activity;
create index sessions_by_activity on sessions (tenant, updated_at);
