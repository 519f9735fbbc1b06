-- Usage and attachments wired into the turn: what a turn cost (the sum of its provider calls, billed
-- with the reply in the commit), and the images a turn carries (ids of `attachments`
-- rows of its session, checked at admission).
alter table turns add column input_tokens bigint not null default 0;
alter table turns add column output_tokens bigint not null default 0;
alter table turns add column cost_usd numeric(20, 8) not null default 0;
alter table turns add column attachments jsonb;
