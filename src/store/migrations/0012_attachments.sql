-- Attachments (vision): images uploaded into a session, kept in the database so
-- that both engines and every process (api, worker) read the same bytes.

create table attachments (
  attachment_id  text primary key,
  tenant         text not null,
  session_id     text not null references sessions (session_id) on delete cascade,
  media_type     text not null check (media_type in ('image/png', 'image/jpeg', 'image/webp', 'image/gif')),
  bytes          integer not null,
  sha256         text not null,
  data           bytea not null,
  uploaded_by    text not null,
  created_at     timestamptz not null default now()
);

create index attachments_by_session on attachments (session_id, created_at);
