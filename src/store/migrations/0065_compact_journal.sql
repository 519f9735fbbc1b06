-- A smaller footprint per turn, with the same rows and the same reads.

-- The transcript's duplicate guard covers replies only: a user message is written in the
-- statement that inserts its turn, whose primary key (tenant, turn_id) already makes it
-- one per turn; a reply is keyed by the lead turn it answers, and a turn id names one
-- session of its tenant, so the session is not part of the key either.
alter table messages drop constraint messages_tenant_session_id_turn_id_role_key;
create unique index messages_one_reply on messages (tenant, turn_id) where role = 'assistant';

-- A turn's admission fingerprint (sha256) as its 32 bytes rather than 64 hex characters.
alter table turns alter column fingerprint type bytea using decode(fingerprint, 'hex');
