import type { Queryable } from './db.js';
import { tenantsSql } from './tenantSweep.js';
import type { Followers, PruneBatch } from './pruneBatches.js';
import { activeSql, activityOrder } from './activity.js';

/** Every table whose rows a session's deletion removes, in the report's order. */
export const sessionTables = [
  'sessions',
  'turns',
  'messages',
  'events',
  'commands',
  'option_offers',
  'input_requests',
  'attachments',
  'rewinds',
  'personal_sessions',
  'adapter_threads',
  'adapter_replies',
  'webhook_streams',
  'webhook_deliveries',
  'executions',
  'execution_commands',
] as const;

/**
 * One batch of whole sessions idle since before `olderThan`, oldest first, with every row
 * that hangs off them: transcript, turns, journal, commands, option offers, requests,
 * attachments (their bytes), rewinds, the personal-session mark, platform thread and
 * outbox, webhook streams and deliveries, and the session's executions with their commands.
 * `usage` (billing) and `memories` (the user's, kept until forgotten) stay.
 *
 * Idle means nothing may still need it: state `idle` or `closed` (not running, queued,
 * waiting for a person or parked for an operator), no queued turn, no live lease (locked
 * with SKIP LOCKED, so a writer that holds the row is never waited for and its session is
 * left for the next run), no pending request, no undelivered outbox row or webhook
 * delivery, no configured follower behind its journal, no execution of its own that has
 * not ended (or whose fan-out parent has not), and not answering a live execution's
 * requests (`resolvers`). Children are deleted explicitly, in the same statement as the
 * session, so that the report counts them.
 */
export async function pruneSessions(
  tx: Queryable,
  options: { olderThan: Date; tenant: string | null; batchSize: number; followers: Followers },
): Promise<PruneBatch> {
  const deleted = await tx.query<Record<string, number>>(
    `with recursive ${tenantsSql(options.tenant === null ? null : '$2')}, candidates as (
       -- Each tenant's oldest idle sessions, from sessions_by_activity (tenantSweep.ts); the
       -- batch is the oldest of them all.
       select c.session_id, c.tenant, c.updated_at
         from tenants t
         cross join lateral (
           select s.session_id, s.tenant, s.updated_at from sessions s
            where s.tenant = t.tenant and ${activeSql('s', '<', '$1::timestamptz')}
              -- No queued turn: the cursor never passes the count, so <= holds exactly when
              -- they are equal. Written <= because PostgreSQL estimates a comparison of two
              -- columns by = at 0.5 % of the rows and by <= at a third: with = it expected a
              -- handful of old idle sessions and read and sorted all of them for every batch;
              -- with <= it walks the tenant's sessions oldest first and stops at the batch.
              and s.state in ('idle', 'closed') and s.input_count <= s.input_cursor
              and (s.lease_token is null or s.lease_expires_at < now())
              and not exists (select 1 from input_requests r
                               where r.session_id = s.session_id and r.state = 'pending')
              and not exists (select 1 from adapter_replies r
                               where r.session_id = s.session_id and r.state = 'pending')
              and not exists (select 1 from webhook_deliveries d
                               where d.session_id = s.session_id and d.state = 'pending')
              and not exists (select 1 from adapter_threads a
                               where a.session_id = s.session_id and a.adapter = any($4::text[])
                                 and a.followed_sequence < s.last_sequence)
              and not exists (select 1 from webhook_endpoints w
                               where w.webhook = any($5::text[]) and s.updated_at >= w.registered_at
                                 and (w.tenant = '*' or w.tenant = s.tenant)
                                 and s.last_sequence > coalesce(
                                       (select ws.followed_sequence from webhook_streams ws
                                         where ws.webhook = w.webhook
                                           and ws.session_id = s.session_id), 0))
              and not exists (select 1 from executions x
                               where x.session_id = s.session_id
                                 and (x.ended_at is null
                                      or exists (select 1 from executions p
                                                  where p.tenant = x.tenant
                                                    and p.execution_id = x.parent_execution_id
                                                    and p.ended_at is null)))
              and not exists (select 1 from executions x, jsonb_each_text(x.resolvers) r
                               where x.tenant = s.tenant and x.ended_at is null
                                 and r.value = s.session_id)
            order by ${activityOrder('s', 'asc')}
            limit $3
            for update of s skip locked) c
        where t.tenant is not null and ($2::text is null or t.tenant = $2)
     ), doomed as (
       select session_id, tenant from candidates order by updated_at limit $3
     ), doomed_executions as (
       select x.tenant, x.execution_id from executions x
         join doomed d on x.tenant = d.tenant and x.session_id = d.session_id
     ), execution_commands_gone as (
       delete from execution_commands c using doomed_executions x
        where c.tenant = x.tenant and c.execution_id = x.execution_id returning 1
     ), executions_gone as (
       delete from executions x using doomed d
        where x.tenant = d.tenant and x.session_id = d.session_id returning 1
     ), turns_gone as (
       delete from turns t using doomed d where t.session_id = d.session_id returning 1
     ), messages_gone as (
       delete from messages m using doomed d where m.session_id = d.session_id returning 1
     ), events_gone as (
       delete from events e using doomed d where e.session_id = d.session_id returning 1
     ), commands_gone as (
       delete from commands c using doomed d where c.session_id = d.session_id returning 1
     ), option_offers_gone as (
       delete from option_offers o using doomed d where o.session_id = d.session_id returning 1
     ), input_requests_gone as (
       delete from input_requests r using doomed d where r.session_id = d.session_id returning 1
     ), attachments_gone as (
       delete from attachments a using doomed d where a.session_id = d.session_id returning 1
     ), rewinds_gone as (
       delete from rewinds r using doomed d where r.session_id = d.session_id returning 1
     ), personal_sessions_gone as (
       delete from personal_sessions p using doomed d where p.session_id = d.session_id
       returning 1
     ), adapter_threads_gone as (
       delete from adapter_threads a using doomed d where a.session_id = d.session_id
       returning 1
     ), adapter_replies_gone as (
       delete from adapter_replies r using doomed d where r.session_id = d.session_id
       returning 1
     ), webhook_streams_gone as (
       delete from webhook_streams w using doomed d where w.session_id = d.session_id
       returning 1
     ), webhook_deliveries_gone as (
       delete from webhook_deliveries w using doomed d where w.session_id = d.session_id
       returning 1
     ), sessions_gone as (
       delete from sessions s using doomed d where s.session_id = d.session_id returning 1
     )
     select (select count(*) from sessions_gone)::integer as sessions,
            (select count(*) from turns_gone)::integer as turns,
            (select count(*) from messages_gone)::integer as messages,
            (select count(*) from events_gone)::integer as events,
            (select count(*) from commands_gone)::integer as commands,
            (select count(*) from option_offers_gone)::integer as option_offers,
            (select count(*) from input_requests_gone)::integer as input_requests,
            (select count(*) from attachments_gone)::integer as attachments,
            (select count(*) from rewinds_gone)::integer as rewinds,
            (select count(*) from personal_sessions_gone)::integer as personal_sessions,
            (select count(*) from adapter_threads_gone)::integer as adapter_threads,
            (select count(*) from adapter_replies_gone)::integer as adapter_replies,
            (select count(*) from webhook_streams_gone)::integer as webhook_streams,
            (select count(*) from webhook_deliveries_gone)::integer as webhook_deliveries,
            (select count(*) from executions_gone)::integer as executions,
            (select count(*) from execution_commands_gone)::integer as execution_commands`,
    [
      options.olderThan,
      options.tenant,
      options.batchSize,
      options.followers.adapters,
      options.followers.webhooks,
    ],
  );
  const removed = deleted.rows[0] ?? { sessions: 0 };
  return { removed, done: (removed.sessions ?? 0) < options.batchSize };
}
