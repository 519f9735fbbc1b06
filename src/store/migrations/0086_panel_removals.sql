-- A workspace panel deleted is gone from `panels`; the user stream (GET /api/v1/me/events)
-- still has to tell the desktops that show it. A removal is kept for as long as a stream
-- may resume from before it (the stream's replay window, an hour), then dropped by the next
-- delete.
create table panel_removals (
  tenant       text not null,
  panel_id     text not null,
  owner        text not null,
  workspace_id text,
  removed_at   timestamptz not null default now(),
  primary key (tenant, panel_id)
);
create index panel_removals_by_time on panel_removals (tenant, removed_at, panel_id);
