-- How each kept revision of a definition came to be, and who made it: what an admin reads
-- in a definition's revisions (GET /api/v1/agents/{name}/revisions).
--   source: `shipped` (the configuration's, seeded at start; tenant ''), `edited` (a
--   tenant admin's PUT), `restored` (a DELETE that gave the tenant the shipped definition
--   back: that definition, kept under the tenant with a revision of its own).
--   created_by: the user who wrote it (null for a shipped one).
alter table definition_history add column source text;

update definition_history set source = case when tenant = '' then 'shipped' else 'edited' end;

alter table definition_history alter column source set not null;

alter table definition_history
  add constraint definition_history_source check (source in ('shipped', 'edited', 'restored'));

alter table definition_history add column created_by text;

update definition_history h set created_by = d.updated_by
  from definitions d
 where h.tenant <> '' and d.kind = h.kind and d.tenant = h.tenant and d.name = h.name
   and d.revision = h.revision;
