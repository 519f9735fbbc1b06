-- A session's domain state (docs/governance.md, "Sessions with state"): `data`, the JSON
-- its agent's `state.schema` describes (null until a turn, an option or an admin first
-- writes it: the agent's `state.initial` applies until then), and `result`, what the
-- session produced. Written only with the commit of a turn (or an admin edit), like memory.
alter table sessions add column data jsonb;
alter table sessions add column result jsonb;
