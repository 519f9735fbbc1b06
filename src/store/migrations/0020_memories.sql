-- Memories: what an agent remembers about one user of one tenant. Written only
-- by the transaction that commits a turn (buffered effects), or deleted by the user.
create table memories (
  memory_id   text primary key,
  tenant      text not null,
  agent       text not null,
  user_id     text not null,
  text        text not null,
  -- English stemming on both engines (PGlite ships the same text search configurations).
  search      tsvector generated always as (to_tsvector('english', text)) stored,
  session_id  text,
  created_at  timestamptz not null default now()
);

create index memories_owner on memories (tenant, user_id, agent, memory_id desc);
create index memories_by_tenant on memories (tenant, memory_id desc);
create index memories_search on memories using gin (search);

-- Every buffered effect applied, by id: a turn committed twice (it cannot, but a retried
-- commit must not count on that) applies each effect once, and a memory forgotten later
-- is never brought back by a replayed `remember`.
create table memory_effects (
  effect_id   text primary key,
  tenant      text not null,
  applied_at  timestamptz not null default now()
);
