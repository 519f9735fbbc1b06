-- Rooms and options.
-- Stored posts: a message from a principal without one of the agent's trigger_roles is
-- journaled and kept in the transcript but is not a turn to answer: no position.
alter table turns alter column position drop not null;
alter table turns drop constraint turns_state_check;
alter table turns add constraint turns_state_check
  check (state in ('queued', 'running', 'done', 'error', 'cancelled', 'stored'));

-- completion_text: the visible closing message differs from the model's raw reply, which
-- stays in the durable history the model sees.
alter table messages add column raw_content text;

-- Options offered with a reply; a client chooses one by admitting a turn with `option`.
-- The first choice locks the offer: a second press is a 409.
create table option_offers (
  request_id     text primary key,
  tenant         text not null,
  session_id     text not null references sessions (session_id) on delete cascade,
  message_id     text not null,
  choices        jsonb not null,
  chosen_value   text,
  chosen_turn_id text,
  created_at     timestamptz not null default now(),
  locked_at      timestamptz
);

-- The option an admitted turn chose ({request_id, value}), for the model's prompt.
alter table turns add column option jsonb;
