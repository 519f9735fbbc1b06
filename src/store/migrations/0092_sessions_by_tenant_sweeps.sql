-- Sessions by time, one index: the followers' sweeps and the whole-session retention walk
-- sessions_by_activity (tenant, updated_at) tenant by tenant (src/store/tenantSweep.ts)
-- instead of an index on updated_at alone. Every journaling statement sets its session's
-- updated_at (three a turn, none a HOT update), and each such update added an entry to both
-- indexes, dead ones included until vacuum.
drop index sessions_by_update;
