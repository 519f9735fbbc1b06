-- People as Parley knows them (docs/web.md, "Preferences"): a row per tenant and user,
-- made the first time the user saves preferences or a profile; until then the defaults
-- stand. What each preference means, and how it is checked, is src/api/preferences.ts;
-- the profile (display name, avatar) src/api/agents.ts (GET | PATCH /api/v1/me).
create table users (
  tenant       text not null,
  user_name    text not null,
  display_name text,
  avatar_url   text,
  preferences  jsonb not null default '{}'::jsonb,
  created_at   timestamptz not null default now(),
  updated_at   timestamptz not null default now(),
  primary key (tenant, user_name)
);
