-- Speech (docs/PROTOCOL.md, "Voices and speech"): a message read aloud in a voice is
-- generated once and kept here when `speech.cache` is on, keyed by tenant, message and
-- voice. The message's row owns it: a session deleted or pruned by retention takes its
-- messages along, and their speech with them.
create table speech (
  tenant      text not null,
  message_id  text not null references messages (message_id) on delete cascade,
  voice       text not null,                -- <provider>/<key>
  media_type  text not null,                -- audio/wav, audio/mpeg, ...
  audio       bytea not null,
  created_at  timestamptz not null default now(),
  primary key (tenant, message_id, voice)
);

-- Speech is billed like model calls: a `usage` row per synthesis, its size in characters
-- of text (tokens stay 0). Text spoken outside a conversation (POST /api/v1/speech) has
-- no session and no agent.
alter table usage add column characters bigint not null default 0;
alter table usage alter column session_id drop not null;
alter table usage alter column agent drop not null;
alter table usage drop constraint usage_purpose_check;
alter table usage add constraint usage_purpose_check
  check (purpose in ('reply', 'gate', 'evaluation', 'approval', 'speech'));
