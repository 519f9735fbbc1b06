-- Conversations have an owner and a visibility (docs/PROTOCOL.md, "Owner and visibility").
--
-- owner: the user who created the session (a principal's user, a platform author, an
--   execution's user); null for sessions made before owners existed, which only an admin
--   may change or delete.
-- visibility: who of the tenant may see the session —
--   private: the owner, the agent's approvers (and an execution's interrupt_to);
--   tenant:  every principal of the tenant (what every session was before);
--   room:    the owner and the listed members (and the agent's approvers).
--   A principal with the admin role sees every session of its tenant.
-- members: user names; they count only while the visibility is `room`.
alter table sessions add column owner text;
alter table sessions add column visibility text not null default 'tenant'
  check (visibility in ('private', 'tenant', 'room'));
alter table sessions add column members text[] not null default '{}';

-- Existing rows stay tenant-visible, except personal sessions: they are their user's,
-- private by definition. Owners are filled in where they are certain.
update sessions s
   set owner = p.user_name, visibility = 'private'
  from personal_sessions p
 where p.session_id = s.session_id;

update sessions s
   set owner = x.user_name
  from executions x
 where x.session_id = s.session_id and s.owner is null;
