-- Sessions by activity keyed by the second of their last activity instead of its instant
-- (src/store/activity.ts): the journaling statements of a turn (three or more, each
-- setting updated_at, none a HOT update) mostly fall in one second, and entries of one
-- key are kept as one posting list (B-tree deduplication) instead of an entry each, so
-- the index grows by a few bytes a turn instead of a key of its own per statement. Queries
-- bound the second by the index and the instant by a filter, and order by both.
drop index sessions_by_activity;
create index sessions_by_activity on sessions
  (tenant, date_bin('1 second', updated_at, timestamptz '2000-01-01 00:00:00+00'));
