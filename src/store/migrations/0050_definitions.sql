-- Agents and missions at runtime. Their definitions live here, in the
-- configuration file's shape (snake_case, defaults applied), seeded from the configuration
-- at start. A row of tenant '' is the shipped definition: every tenant sees it unless it
-- has a row of its own. A tenant's row is its customized (or created) definition: a
-- changed configuration no longer overwrites it, and deleting it restores the shipped one
-- (seed 003's shipped_content_hash / is_customized).

create sequence definition_revisions;

create table definitions (
  kind                  text not null check (kind in ('agent', 'mission')),
  tenant                text not null,
  name                  text not null,
  namespace             text not null default 'default',
  definition            jsonb not null,
  -- sha256 of the definition's canonical JSON.
  content_hash          text not null,
  -- Shipped row: its own hash. Customized row: the shipped hash it was edited from (null:
  -- created through the API), so a listing can tell that the shipped version moved on.
  shipped_content_hash  text,
  is_customized         boolean not null,
  -- Raised by every write: the directories' cheap change detector (count + max).
  revision              bigint not null default nextval('definition_revisions'),
  updated_by            text,
  updated_at            timestamptz not null default now(),
  primary key (kind, tenant, name),
  check (is_customized = (tenant <> ''))
);
