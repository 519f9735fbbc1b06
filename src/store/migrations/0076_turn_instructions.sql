-- A turn's own instructions and metadata (docs/protocols.md, "OpenAI-compatible API"):
-- what a client sends along with one message. `instructions` are appended to the agent's
-- for the burst the turn runs in; `metadata` (string pairs) is the client's own, answered
-- back with the turn's response. Both are the session's text: deleted with it.
alter table turns add column instructions text;
alter table turns add column metadata jsonb;

-- A response deleted through the OpenAI-compatible API: it is no response any more (its id
-- answers 404), while its turn stays in the session's journal and transcript (deleting
-- the session deletes the text).
alter table turns add column response_deleted_at timestamptz;
