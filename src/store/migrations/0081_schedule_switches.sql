-- The runtime switch of a configured schedule (PATCH /api/v1/schedules/{name}, docs/missions.md,
-- "Schedules"). Kept apart from `schedules`, which mirrors the configuration and is
-- re-seeded at every start: a switch outlives a change of the schedule's definition and a
-- restart. No row means enabled. The scheduler's claim (store/fireSchedules.ts) leaves a
-- schedule with `enabled = false` alone; its timer stays where it was, so re-enabling sees
-- the fire times that passed as missed ones, handled by the schedule's `catch_up`.
create table schedule_switches (
  name        text primary key,
  tenant      text not null,
  enabled     boolean not null,
  updated_by  text not null,
  updated_at  timestamptz not null default now()
);
