-- Schedules. Seeded from the configuration at start; a fire time is claimed in one
-- transaction (FOR UPDATE SKIP LOCKED over the due rows), and the primary key of
-- schedule_fires makes one execution per (schedule, fire time) across any number of workers.

create table schedules (
  name          text primary key,
  tenant        text not null,
  definition    jsonb not null,
  content_hash  text not null,
  next_fire_at  timestamptz,
  last_fire_at  timestamptz,
  updated_at    timestamptz not null default now()
);

create index schedules_due on schedules (next_fire_at) where next_fire_at is not null;

create table schedule_fires (
  schedule      text not null,
  fire_time     timestamptz not null,
  tenant        text not null,
  -- null when the fire started nothing (overlap: skip).
  execution_id  text,
  outcome       text not null check (outcome in ('started', 'queued', 'skipped')),
  created_at    timestamptz not null default now(),
  primary key (schedule, fire_time)
);
