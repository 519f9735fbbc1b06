-- The photo library (docs/PROTOCOL.md, "Photos"): a user's images, uploaded or generated,
-- kept apart from any conversation. A photo holds its own bytes rather than pointing at an
-- attachment: attachments go with their session (retention, deletion), a library stays the
-- user's until the user deletes from it. `source` says where a photo came from (the session
-- and attachment of a chat upload; the session, turn, tool call, model and prompt of a
-- generated image); it is never followed, so it stays valid after its session is gone.
create table photos (
  photo_id    text primary key,
  tenant      text not null,
  owner       text not null,
  origin      text not null check (origin in ('upload', 'generated')),
  title       text,
  source      jsonb not null default '{}'::jsonb,
  media_type  text not null check (media_type in ('image/png', 'image/jpeg', 'image/webp', 'image/gif')),
  bytes       bytea not null,
  size        integer not null,
  created_at  timestamptz not null default now(),
  updated_at  timestamptz not null default now()
);
create index photos_by_owner on photos (tenant, owner, created_at desc, photo_id desc);
create index photos_by_origin on photos (tenant, owner, origin, created_at desc, photo_id desc);
