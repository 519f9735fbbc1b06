-- The user a provider call was for (GET /api/v1/usage?group_by=user): the author of the
-- turn it answered (the lead turn of its burst), else the session's owner; null when
-- neither is known. Written with the row, because billing outlives the conversation: a
-- session pruned by retention takes its turns and messages along, and its usage rows stay.
alter table usage add column user_name text;

update usage u
   set user_name = coalesce(
         (select m.author from messages m
           where m.tenant = u.tenant and m.session_id = u.session_id
             and m.turn_id = u.turn_id and m.role = 'user'),
         -- The owner read through the row's JSON, not as a column: a database that does
         -- not have 0060's `owner` yet (its migrations applied out of order) reads null.
         (select to_jsonb(s) ->> 'owner' from sessions s
           where s.session_id = u.session_id and s.tenant = u.tenant));
