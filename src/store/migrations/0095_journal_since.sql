-- The journal's age rule finds old journals through their sessions instead of an index of
-- every event by time: `sessions.journal_since` is a lower bound of the time of the
-- session's oldest journaled event (a new session's creation time; raised by the rule to
-- its oldest remaining event, or to the time of the cut when none remain), and
-- `sessions_by_journal_age (tenant, journal_since)` orders them. Journaling statements do
-- not touch it, so it is not a reason for their updates of the session row to add index
-- entries of a new key. `events_by_age` (an entry per event, about a fifth of the
-- journal's index bytes) goes, and so does `events.tenant`: the session row says it once.
alter table sessions add column journal_since timestamptz;
-- Sessions written before: their first event's time, or now for an empty journal.
update sessions s
   set journal_since = coalesce((select e.at from events e where e.session_id = s.session_id
                                  order by e.sequence limit 1), now());
alter table sessions alter column journal_since set default now();
alter table sessions alter column journal_since set not null;
create index sessions_by_journal_age on sessions (tenant, journal_since);
drop index events_by_age;
alter table events drop column tenant;
